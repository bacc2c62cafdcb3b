"""``matcha audit``: the audit report of one match, or of every match of a
ladder (or of the whole store) with a progress bar and a summary.

The exit status is what a script checks before publishing standings:
0 when everything audited is consistent, 1 when anything is not.
"""

from __future__ import annotations

import asyncio
import sys
from collections import Counter
from dataclasses import replace
from pathlib import Path

import click
import msgspec
import psycopg
from psycopg import AsyncConnection
from tqdm import tqdm  # type: ignore[import-untyped]

from service.audit.audit import audit_seen_by
from service.audit.render import render
from service.audit.report import AuditReport, to_json
from service.audit.rows import match_ids
from service.audit.timing import DEFAULT_GAP_S
from service.cli_defaults import (
    database_options,
    default_data_dir,
    ladder_match_ids,
    player_match_ids,
    resolve_ladder,
    resolve_player,
)
from service.cli_defaults import database_url as database_url_or_local
from service.evidence.config import EvidenceSettings
from service.evidence.receipts import decode_receipts
from service.evidence.service import Evidence, evidence_at
from service.matches.policy import Caller

OPERATOR = Caller(player_id=None, roles=frozenset({"admin"}))
"""Whoever runs ``matcha audit`` (they hold the database URL)."""


class MatchLine(msgspec.Struct, frozen=True, kw_only=True):
    match_id: str
    status: str
    consistent: bool
    verdict: str


class AuditSummary(msgspec.Struct, frozen=True, kw_only=True):
    scope: str
    audited: int
    consistent: int
    inconsistent: int
    by_status: dict[str, int]
    matches: list[MatchLine]


class _Evidence(msgspec.Struct, frozen=True, kw_only=True):
    """What ``--keys``, ``--checkpoints`` and ``--receipt`` name (else the data folder's)."""

    keys: str | None = None
    checkpoints: str | None = None
    receipts: tuple[str, ...] = ()
    data_dir: Path | None = None
    own_folder: bool = True
    """The database is the data folder's (no URL given, or ``--data-dir`` named)."""


def _found(ev: _Evidence, *, own_folder: bool) -> Evidence | None:
    """The service's public keys and checkpoint log, found where the service keeps
    them: ``--keys`` / ``--checkpoints``, else the environment the service reads
    ($MATCHA_PUBLIC_KEYS_FILE, $MATCHA_CHECKPOINT_DIR, $MATCHA_DATA_DIR), else, when
    the database is the data folder's own (``own_folder``: no URL given, or
    ``--data-dir``), that folder's, as ``matcha run`` lays it out. Else none: the
    report then says signatures and checkpoints were not checked."""
    base = EvidenceSettings()
    folder = base.data_dir
    if not folder and own_folder:
        folder = str(ev.data_dir or default_data_dir())
    settings = replace(
        base,
        public_keys_file=ev.keys or base.public_keys_file,
        checkpoint_dir=ev.checkpoints or base.checkpoint_dir,
        data_dir=str(ev.data_dir) if ev.data_dir else folder,
    )
    return evidence_at(settings)


async def _audit(
    conn: AsyncConnection, match_id: str, gap_s: float, ev: _Evidence, evidence: Evidence | None
) -> AuditReport:
    receipts = [r for path in ev.receipts for r in decode_receipts(Path(path).read_bytes())]
    # The operator audits as an administrator, through the one audit the API runs:
    # the viewer policy shows a live match's public log only, as the API does.
    return await audit_seen_by(
        conn, match_id, OPERATOR, evidence, receipts=receipts, gap_threshold_s=gap_s
    )


async def _one(
    url: str, match_id: str, as_json: bool, gap_s: float, log: bool, ev: _Evidence
) -> bool:
    async with await AsyncConnection.connect(url, autocommit=True) as conn:
        report = await _audit(conn, match_id, gap_s, ev, _found(ev, own_folder=ev.own_folder))
    if as_json:
        click.echo(to_json(report).decode())
    else:
        click.echo(render(report, log=log))
    return report.verdict.consistent


Scope = tuple[str, "list[str] | None"]
"""How the summary names what is audited, and its match ids (None: every match)."""


async def _many(url: str, scope: Scope, as_json: bool, gap_s: float, ev: _Evidence) -> bool:
    lines: list[MatchLine] = []
    name, chosen = scope
    evidence = _found(ev, own_folder=ev.own_folder)
    async with await AsyncConnection.connect(url, autocommit=True) as conn:
        ids = chosen if chosen is not None else await match_ids(conn)
        bar = tqdm(ids, desc="auditing", unit="match", file=sys.stderr, disable=not ids)
        for match_id in bar:
            report = await _audit(conn, match_id, gap_s, ev, evidence)
            lines.append(
                MatchLine(
                    match_id=match_id,
                    status=report.status,
                    consistent=report.verdict.consistent,
                    verdict=report.verdict.line,
                )
            )
            bad = sum(not line.consistent for line in lines)
            bar.set_postfix(inconsistent=bad)
    summary = AuditSummary(
        scope=name,
        audited=len(lines),
        consistent=sum(line.consistent for line in lines),
        inconsistent=sum(not line.consistent for line in lines),
        by_status=dict(Counter(line.status for line in lines)),
        matches=lines,
    )
    if as_json:
        click.echo(msgspec.json.encode(summary).decode())
    else:
        statuses = ", ".join(f"{n} {s}" for s, n in sorted(summary.by_status.items()))
        click.echo(
            f"Audited {summary.audited} matches ({summary.scope}): "
            f"{summary.consistent} consistent, {summary.inconsistent} inconsistent"
            + (f" [{statuses}]" if statuses else "")
        )
        for line in lines:
            if not line.consistent:
                click.echo(f"  {line.match_id} ({line.status}): {line.verdict}")
    return summary.inconsistent == 0


@click.command("audit")
@click.argument("match_id", required=False)
@click.option("--ladder", "ladder_id", help="Audit every match of this ladder.")
@click.option("--all", "every", is_flag=True, help="Audit every match in the store.")
@click.option("--json", "as_json", is_flag=True, help="Print the machine-readable report.")
@click.option(
    "--gap-seconds",
    type=float,
    default=DEFAULT_GAP_S,
    show_default=True,
    help="A silence longer than this between two events is reported as a long gap.",
)
@click.option("--no-log", is_flag=True, help="Leave the event log out of the text report.")
@click.option("--player", "player", help="Audit every match of this player (id or name).")
@database_options
@click.option(
    "--keys",
    type=click.Path(exists=True, dir_okay=False),
    help="The service's public keys (GET /api/keys) [MATCHA_PUBLIC_KEYS_FILE].",
)
@click.option(
    "--checkpoints",
    type=click.Path(file_okay=False),
    help="The folder of checkpoint logs [MATCHA_CHECKPOINT_DIR].",
)
@click.option(
    "--receipt",
    "receipts",
    multiple=True,
    type=click.Path(exists=True, dir_okay=False),
    help="A file of receipts a player holds (repeatable): checked against the log.",
)
def audit(
    match_id: str | None,
    ladder_id: str | None,
    every: bool,
    as_json: bool,
    gap_seconds: float,
    no_log: bool,
    player: str | None,
    database_url: str | None,
    data_dir: Path | None,
    keys: str | None,
    checkpoints: str | None,
    receipts: tuple[str, ...],
) -> None:
    """Audit MATCH_ID (or --ladder ID|NAME, --player ID|NAME, or --all): chain,
    re-fold, fairness, timing.

    Exits 1 when anything audited is inconsistent, 2 when asked for a ladder or
    player that does not exist.
    """
    chosen = sum((match_id is not None, ladder_id is not None, player is not None, every))
    if chosen != 1:
        raise click.UsageError("Give exactly one of MATCH_ID, --ladder, --player or --all.")
    ev = _Evidence(
        keys=keys,
        checkpoints=checkpoints,
        receipts=receipts,
        data_dir=data_dir,
        own_folder=database_url is None or data_dir is not None,
    )
    url = database_url_or_local(database_url, data_dir)
    if match_id is not None:
        ok = asyncio.run(_one(url, match_id, as_json, gap_seconds, not no_log, ev))
        sys.exit(0 if ok else 1)
    scope: Scope = ("all matches", None)
    if ladder_id is not None or player is not None:
        with psycopg.connect(url, autocommit=True) as conn:
            if ladder_id is not None:
                found = resolve_ladder(conn, ladder_id)
                scope = (f"ladder {ladder_id}", ladder_match_ids(conn, found))
            else:
                assert player is not None
                found = resolve_player(conn, player)
                scope = (f"player {player}", player_match_ids(conn, found))
    ok = asyncio.run(_many(url, scope, as_json, gap_seconds, ev))
    sys.exit(0 if ok else 1)
