"""``matcha schemas --out docs/schemas``: JSON Schema of every command, event and view.

One file per family (``commands.json``, ``events.json``, ``views.json``,
``event_views.json``), each a msgspec ``schema_components`` document: the
family's union under ``"root"`` and every Struct under ``"$defs"``. A client in
any language can generate its types from these files.
"""

import json
from pathlib import Path
from typing import Any

import click
import msgspec

from schemas.commands import Command
from schemas.events import Event
from schemas.views import EventView, LogEntry, MatchView

FAMILIES: dict[str, Any] = {
    "commands": Command,
    "events": Event,
    "event_views": EventView,
    "views": MatchView,
    "log_entry": LogEntry,
}


def export(out: Path) -> list[Path]:
    """Write one schema file per family into ``out``; returns the paths written."""
    out.mkdir(parents=True, exist_ok=True)
    written = []
    for name, root in FAMILIES.items():
        (schema,), components = msgspec.json.schema_components(
            [root], ref_template="#/$defs/{name}"
        )
        document = {
            "$schema": "https://json-schema.org/draft/2020-12/schema",
            "title": f"Matcha {name.replace('_', ' ')}",
            **schema,
            "$defs": components,
        }
        path = out / f"{name}.json"
        path.write_text(json.dumps(document, indent=2, sort_keys=True) + "\n")
        written.append(path)
    return written


@click.command()
@click.option(
    "--out",
    type=click.Path(file_okay=False, path_type=Path),
    default=Path("docs/schemas"),
    show_default=True,
)
def schemas(out: Path) -> None:
    """Export JSON Schema for every command, event and view."""
    for path in export(out):
        click.echo(f"wrote {path}")
