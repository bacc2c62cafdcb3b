"""The one console entry point: ``matcha <command>``.

Each command lives in the module of the part it drives; this file only
gathers them, importing lazily so ``matcha simulate`` never loads the web stack.
"""

import importlib
from typing import Any

import click

from service.cli_errors import explain

# name -> "module:attribute" of a click command
COMMANDS: dict[str, str] = {
    "api": "service.serve:api_command",
    "audit": "service.audit.cli:audit",
    "bots": "service.bots.cli:bots",
    "cluster": "service.cluster.command:cluster",
    "export": "workers.export:export",
    "flags": "service.fairplay.cli:flags",
    "keys": "service.evidence.cli:keys",
    "migrate": "service.cli_migrate:migrate_command",
    "run": "service.run:run",
    "schemas": "service.schema_export:schemas",
    "simulate": "service.simulate:simulate",
    "verify": "service.verify:verify",
    "witness": "service.evidence.witness:witness_command",
    "tournament": "service.tournaments.cli:tournament",
    "worker": "workers.cli:worker",
}


class _LazyGroup(click.Group):
    def invoke(self, ctx: click.Context) -> Any:
        """Run the subcommand; whatever it lets out becomes one sentence on stderr and
        its exit status (``service.cli_errors``), never a traceback."""
        try:
            return super().invoke(ctx)
        except (click.exceptions.Exit, click.ClickException, click.Abort):
            raise  # click's own: a usage error is already one line, exit 2
        except KeyboardInterrupt:
            ctx.exit(130)
        except Exception as exc:
            status, sentence = explain(exc)
            name = ctx.invoked_subcommand or "matcha"
            click.echo(f"matcha {name}: {sentence}", err=True)
            ctx.exit(status)

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
