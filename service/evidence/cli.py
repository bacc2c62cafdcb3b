"""``matcha verify RECORD [RECEIPTS...]`` and ``matcha keys``.

``verify`` checks a match record offline, with only the service's public keys
(``--keys``: the JSON of ``GET /api/keys``, pinned by the verifier; without
it the keys the record carries are used, which proves only that the record is
self-consistent): the hash chain, a re-fold of every event through the
engine, every deal against the revealed seed, the record's final receipt, its
checkpoint proof, and each receipt file given (what the web client keeps, or
the ``receipt`` of a command's answer). Exit status 0: everything holds; 1:
something does not (each problem is printed); 2: a usage error.
"""

from __future__ import annotations

import sys
from pathlib import Path

import click
import msgspec

from service.evidence.keys import Keyring, load_keyring, rotate
from service.evidence.receipts import Receipt, decode_receipts
from service.replays.signatures import signed_checks


def verify_record(
    data: bytes, receipts: list[tuple[str, Receipt]], keyring: Keyring | None
) -> tuple[list[str], list[str]]:
    """(what holds, what does not) for a record and receipts; pure."""
    from service.replays import check_record, decode_record

    record = decode_record(data)
    ok: list[str] = []
    problems: list[str] = []
    if keyring is None:
        keyring = Keyring(record.keys)
        ok.append(
            f"keys: {len(keyring)} taken from the record itself (pin them with --keys)"
            if len(keyring)
            else "keys: none"
        )
    checked = check_record(record)
    if checked.ok:
        ok.append(
            f"record: {len(record.events)} events, chain {checked.chain}, re-fold "
            f"{checked.refold}, fairness {checked.fairness}"
        )
    problems += [f"record: {p}" for p in checked.problems]
    problems += [f"record lists: {p}" for p in record.problems]
    more_ok, more = signed_checks(record, receipts, keyring)
    return ok + more_ok, problems + more


@click.command("verify")
@click.argument("record", type=click.Path(exists=True, dir_okay=False, path_type=Path))
@click.argument("receipts", nargs=-1, type=click.Path(exists=True, dir_okay=False, path_type=Path))
@click.option(
    "--keys",
    "keys_file",
    type=click.Path(exists=True, dir_okay=False, path_type=Path),
    help="The service's public keys (JSON of GET /api/keys). Default: those in the record.",
)
def verify(record: Path, receipts: tuple[Path, ...], keys_file: Path | None) -> None:
    """Check a match RECORD (GET /api/matches/{id}/record) and RECEIPTS offline."""
    from service.errors import ValidationFailed

    try:
        keyring = Keyring.from_json(keys_file.read_bytes()) if keys_file else None
        held: list[tuple[str, Receipt]] = []
        for path in receipts:
            found = decode_receipts(path.read_bytes())
            held += [
                (f"{path.name}[{i}]" if len(found) > 1 else path.name, r)
                for i, r in enumerate(found)
            ]
        ok, problems = verify_record(record.read_bytes(), held, keyring)
    except (ValidationFailed, msgspec.DecodeError, ValueError) as exc:
        raise click.UsageError(str(exc)) from exc
    for line in ok:
        click.echo(f"ok       {line}")
    for line in problems:
        click.echo(f"PROBLEM  {line}")
    click.echo("verified: the record holds up" if not problems else f"{len(problems)} problem(s)")
    sys.exit(1 if problems else 0)


@click.group("keys")
def keys() -> None:
    """The service's signing key and public keys (docs/audit.md "Keys")."""


@keys.command("show")
def show() -> None:
    """Print every public key as JSON (what GET /api/keys serves)."""
    from service.evidence.config import EvidenceSettings, load_public_keys

    click.echo(load_public_keys(EvidenceSettings()).to_json().decode())


@keys.command("rotate")
def rotate_command() -> None:
    """Retire the current signing key into the keyring and make a new one.

    Restart the API processes afterwards; what the old key signed keeps verifying.
    """
    from service.evidence.config import EvidenceSettings

    settings = EvidenceSettings()
    if not settings.key_path.exists():
        raise click.ClickException(f"no signing key at {settings.key_path}")
    retired, new = rotate(settings.key_path, settings.keyring_path)
    click.echo(f"retired key {retired.key_id}; now signing with {new.key_id}")
    click.echo(f"public keys: {settings.keyring_path} ({len(load_keyring(settings.keyring_path))})")
