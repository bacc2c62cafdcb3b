"""``matcha verify RECORD [RECEIPTS...]``: a match record checked offline;
``matcha verify --checkpoints PROOF``: a later checkpoint extends an earlier one.

With only the service's public keys (``--keys``: the JSON of ``GET /api/keys``,
pinned by the verifier; without it the keys the record carries are used, which
proves only that the record is self-consistent): the hash chain, a re-fold of
every event through the engine, every deal against the revealed seed, the
record's final receipt, its checkpoint proof, and each receipt file given (what
the web client keeps, or the ``receipt`` of a command's answer). Exit status 0:
everything holds; 1: something does not (each problem is printed); 2: a usage
error.

``--checkpoints PROOF`` checks the JSON of ``GET /api/checkpoints/consistency``:
both checkpoints' signatures and the RFC 9162 consistency proof between their
history trees. With ``--seen FILE`` the proof must start at the checkpoint kept
in FILE (the one you last saw), and FILE then keeps the proof's later one, so
each run checks that the log was not cut or rewritten since the last.

A module of its own above ``service.evidence`` and ``service.replays``: it uses
both (the record's format and checks are the replays', the signatures the
evidence's), and neither may import the other's console.
"""

from __future__ import annotations

import sys
from pathlib import Path

import click
import msgspec

from service.errors import ValidationFailed
from service.evidence.checkpoints import Checkpoint, ConsistencyProof, consistency_problem
from service.evidence.keys import Keyring
from service.evidence.receipts import Receipt, decode_receipts
from service.replays import check_record, decode_record
from service.replays.signatures import signed_checks


def verify_record(
    data: bytes, receipts: list[tuple[str, Receipt]], keyring: Keyring | None
) -> tuple[list[str], list[str]]:
    """(what holds, what does not) for a record and receipts; pure."""
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


_proof_decoder = msgspec.json.Decoder(ConsistencyProof)
_checkpoint_decoder = msgspec.json.Decoder(Checkpoint)


def verify_checkpoints(
    data: bytes, keyring: Keyring, seen: Checkpoint | None
) -> tuple[list[str], list[str], ConsistencyProof]:
    """(what holds, what does not, the proof) for a consistency proof; pure."""
    proof = _proof_decoder.decode(data)
    ok: list[str] = []
    problems: list[str] = []
    if seen is not None and seen != proof.first:
        problems.append(
            f"the proof starts at checkpoint {proof.first.sequence}, not at the one you last "
            f"saw ({seen.sequence}, {seen.origin}) or not as you saw it"
        )
    found = consistency_problem(proof, keyring)
    if found is not None:
        problems.append(found)
    elif not problems:
        first, second = proof.first, proof.second
        ok.append(
            f"checkpoints: {second.sequence} ({second.history_size} leaves, signed "
            f"{second.issued_at}) extends {first.sequence} ({first.history_size} leaves, "
            f"signed {first.issued_at})"
        )
    return ok, problems, proof


@click.command("verify")
@click.argument(
    "record", required=False, type=click.Path(exists=True, dir_okay=False, path_type=Path)
)
@click.argument("receipts", nargs=-1, type=click.Path(exists=True, dir_okay=False, path_type=Path))
@click.option(
    "--keys",
    "keys_file",
    type=click.Path(exists=True, dir_okay=False, path_type=Path),
    help="The service's public keys (JSON of GET /api/keys). Default: those in the record.",
)
@click.option(
    "--checkpoints",
    "proof_file",
    type=click.Path(exists=True, dir_okay=False, path_type=Path),
    help="A consistency proof (JSON of GET /api/checkpoints/consistency) to check instead.",
)
@click.option(
    "--seen",
    "seen_file",
    type=click.Path(dir_okay=False, path_type=Path),
    help="With --checkpoints: the checkpoint you last saw; updated to the new one if it holds.",
)
def verify(
    record: Path | None,
    receipts: tuple[Path, ...],
    keys_file: Path | None,
    proof_file: Path | None,
    seen_file: Path | None,
) -> None:
    """Check a match RECORD (GET /api/matches/{id}/record) and RECEIPTS offline, or
    (--checkpoints) that a later checkpoint extends an earlier one."""
    if proof_file is not None:
        _verify_checkpoints(proof_file, keys_file, seen_file)
        return
    if record is None:
        raise click.UsageError("give a RECORD, or --checkpoints PROOF")
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


__all__ = ["signed_checks", "verify", "verify_checkpoints", "verify_record"]


def _verify_checkpoints(proof_file: Path, keys_file: Path | None, seen_file: Path | None) -> None:
    if keys_file is None:
        raise click.UsageError("--checkpoints needs --keys (a proof carries no keys)")
    try:
        keyring = Keyring.from_json(keys_file.read_bytes())
        seen = (
            _checkpoint_decoder.decode(seen_file.read_bytes())
            if seen_file is not None and seen_file.exists()
            else None
        )
        ok, problems, proof = verify_checkpoints(proof_file.read_bytes(), keyring, seen)
    except (msgspec.DecodeError, ValueError) as exc:
        raise click.UsageError(str(exc)) from exc
    for line in ok:
        click.echo(f"ok       {line}")
    for line in problems:
        click.echo(f"PROBLEM  {line}")
    if problems:
        click.echo(f"{len(problems)} problem(s)")
        sys.exit(1)
    if seen_file is not None:
        seen_file.write_bytes(msgspec.json.encode(proof.second) + b"\n")
        click.echo(f"seen: checkpoint {proof.second.sequence} kept in {seen_file}")
    click.echo("verified: the later checkpoint extends the earlier one")
