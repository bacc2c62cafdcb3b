"""The one console entry point: ``matcha <command>``.

Each command lives in the module of the part it drives; this file only
gathers them, importing lazily so ``matcha simulate`` never loads the web stack.
"""

import importlib

import click

# name -> "module:attribute" of a click command
COMMANDS: dict[str, str] = {
    "api": "service.serve:api_command",
    "audit": "service.audit.cli:audit",
    "bots": "service.bots.cli:bots",
    "export": "workers.export:export",
    "keys": "service.evidence.cli:keys",
    "migrate": "service.store.migrate:migrate_command",
    "run": "service.run:run",
    "schemas": "service.schema_export:schemas",
    "simulate": "service.simulate:simulate",
    "verify": "service.evidence.cli:verify",
    "tournament": "service.tournaments.cli:tournament",
    "worker": "workers.cli:worker",
}


class _LazyGroup(click.Group):
    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted(COMMANDS)

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        target = COMMANDS.get(cmd_name)
        if target is None:
            return None
        module_name, attr = target.split(":")
        command: click.Command = getattr(importlib.import_module(module_name), attr)
        return command


@click.group(cls=_LazyGroup)
def main() -> None:
    """Matcha match service: run it, simulate, audit and export matches."""


if __name__ == "__main__":
    main()
