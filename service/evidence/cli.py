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
from typing import TYPE_CHECKING

import click
import msgspec

from service.evidence.checkpoints import proof_problem
from service.evidence.keys import Keyring, load_keyring, rotate
from service.evidence.receipts import Receipt, decode_receipts, receipt_holds, receipt_problem

if TYPE_CHECKING:
    from service.replays import MatchRecord


def _receipt_against_record(
    receipt: Receipt, hashes: dict[int, bytes], seed: str | None, match_id: str, what: str
) -> str | None:
    if receipt.match_id != match_id:
        return f"{what} is for match {receipt.match_id!r}, not {match_id!r}"
    chain_hash = hashes.get(receipt.version)
    last = max(hashes, default=0)
    if chain_hash is None:
        return (
            f"{what} shows the log reached version {receipt.version} (at "
            f"{receipt.server_time}), but the record ends at version {last}: events were removed"
        )
    if seed is None:
        return f"{what}: the record reveals no seed, so its blinded hash cannot be checked"
    if not receipt_holds(receipt, chain_hash, seed):
        return (
            f"{what} signs another version {receipt.version} than the record's: the log was "
            "rewritten"
        )
    return None


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


def signed_checks(
    record: MatchRecord,
    receipts: list[tuple[str, Receipt]],
    keyring: Keyring,
    *,
    require_receipt: bool = True,
) -> tuple[list[str], list[str]]:
    """(what holds, what does not) of what the service signed about ``record``: its
    final receipt, its checkpoint proof, and each receipt given."""
    ok: list[str] = []
    problems: list[str] = []
    match_id = record.headers.match_id
    hashes: dict[int, bytes] = {}
    for e in record.events:
        try:
            hashes[e.version] = bytes.fromhex(e.hash)
        except ValueError:
            problems.append(f"event {e.version}: its hash is not hex")
    seed = record.headers.seed
    last = max(hashes, default=0)
    final = record.receipt
    if final is None:
        if require_receipt:
            problems.append("the record carries no receipt: nothing signed by the service")
    else:
        found = receipt_problem(final, keyring) or _receipt_against_record(
            final, hashes, seed, match_id, "the record's receipt"
        )
        if found is not None:
            problems.append(found)
        elif final.version != last:
            problems.append(
                f"the record's receipt signs version {final.version}, but the record goes on to "
                f"version {last}: events after it are not signed"
            )
        else:
            ok.append(
                f"receipt: version {final.version} signed by key {final.key_id} at "
                f"{final.server_time}"
            )
    if record.checkpoint is not None:
        proof = record.checkpoint
        found = proof_problem(proof, keyring)
        if found is None and proof.leaf.match_id != match_id:
            found = f"the checkpoint proof is for match {proof.leaf.match_id!r}"
        if found is None:
            as_receipt = Receipt(
                match_id=match_id,
                version=proof.leaf.version,
                blinded_hash=proof.leaf.hash,
                server_time=proof.checkpoint.issued_at,
                key_id=proof.checkpoint.key_id,
                signature="",
            )
            found = _receipt_against_record(
                as_receipt, hashes, seed, match_id, f"checkpoint {proof.checkpoint.sequence}"
            )
        if found is not None:
            problems.append(found)
        else:
            ok.append(
                f"checkpoint: {proof.checkpoint.sequence} ({proof.checkpoint.tree_size} matches, "
                f"signed {proof.checkpoint.issued_at}) holds version {proof.leaf.version}"
            )
    for name, receipt in receipts:
        found = receipt_problem(receipt, keyring)
        if found is not None:
            problems.append(f"{name}: {found}")
            continue
        found = _receipt_against_record(receipt, hashes, seed, match_id, name)
        if found is not None:
            problems.append(found)
        else:
            ok.append(f"{name}: version {receipt.version} holds")
    return ok, problems


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
