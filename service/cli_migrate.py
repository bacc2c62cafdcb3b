"""``matcha migrate``: apply the pending migrations, to ``make run``'s database by default.

It lives beside the other console commands (not in ``service.store.migrate``) because
finding ``make run``'s server is the console's business (``service.cli_defaults``),
above the store. On the embedded server it logs in as the owner of the schema
(``postgres``), not as the service's ``matcha_app``, which may not change it.
"""

from __future__ import annotations

from pathlib import Path

import click

from service.cli_defaults import OWNER_USER, database_options
from service.cli_defaults import database_url as database_url_or_local
from service.store.migrate import apply_migrations, pending_migrations


@click.command("migrate")
@database_options
def migrate_command(database_url: str | None, data_dir: Path | None) -> None:
    """Apply the pending database migrations (a role allowed to change the schema)."""
    url = database_url_or_local(database_url, data_dir, user=OWNER_USER)
    pending = pending_migrations(url)
    apply_migrations(url)
    if pending:
        click.echo(f"applied {len(pending)} migration(s): {', '.join(pending)}")
    else:
        click.echo("database is up to date")
