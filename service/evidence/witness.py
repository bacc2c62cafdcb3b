"""``matcha witness``: a second, independent witness of the
service's checkpoints (docs/audit.md "A witness").

A witness is run by someone other than the service's operator, with its own
Ed25519 key and its own append-only file. Each round it fetches the latest
checkpoint, checks the service's signature with keys pinned at its first run,
and checks that the checkpoint extends the one it witnessed last (the RFC 9162
consistency proof of ``GET /api/checkpoints/consistency``); then it countersigns
it into its file. A checkpoint that does not extend the last one witnessed, one
that goes back, or a second one with a sequence already witnessed is an
**alarm**: nothing is written and the process exits 1. So cutting the log needs
the service and every witness to collude: the witness's file shows, under the
witness's key, what the service had signed before.

    witness message = "matcha-witness-v1" || field(origin) || field(sequence)
                      || field(history_size) || field(history_root raw)
                      || field(root raw) || field(checkpoint signature raw)
                      || field(witnessed_at) || field(witness key id)

A console module (the cli part): it speaks HTTP to the service like any client.
"""

from __future__ import annotations

import base64
import os
import sys
import time
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path

import click
import httpx
import msgspec

from service.evidence.checkpoints import (
    CHECKPOINT_FORMAT_V2,
    Checkpoint,
    ConsistencyProof,
    checkpoint_problem,
    consistency_problem,
)
from service.evidence.keys import Keyring, SigningKey, load_or_create_signing_key
from service.store.chain import field

WITNESS_FORMAT = "matcha-witness/1"
_DOMAIN = b"matcha-witness-v1"


class Witnessed(msgspec.Struct, frozen=True, kw_only=True):
    """One line of the witness's file: a checkpoint and the witness's countersignature."""

    format: str = WITNESS_FORMAT
    checkpoint: Checkpoint
    witnessed_at: str
    witness_key_id: str
    witness_signature: str
    """Ed25519 over ``witness_message``, standard base64."""


def witness_message(checkpoint: Checkpoint, witnessed_at: str, witness_key_id: str) -> bytes:
    assert isinstance(checkpoint.history_size, int) and isinstance(checkpoint.history_root, str)
    return b"".join(
        (
            _DOMAIN,
            field(checkpoint.origin.encode()),
            field(str(checkpoint.sequence).encode()),
            field(str(checkpoint.history_size).encode()),
            field(bytes.fromhex(checkpoint.history_root)),
            field(bytes.fromhex(checkpoint.root)),
            field(base64.b64decode(checkpoint.signature)),
            field(witnessed_at.encode()),
            field(witness_key_id.encode()),
        )
    )


class Alarm(Exception):
    """The service signed something that contradicts what this witness saw."""


def step(
    latest: Checkpoint,
    last: Checkpoint | None,
    fetch_proof: Callable[[int, int], ConsistencyProof],
    service_keys: Keyring,
    witness: SigningKey,
    now: str | None = None,
) -> Witnessed | None:
    """One round: the line to append for ``latest`` (None: it is the one already
    witnessed). Raises ``Alarm`` when ``latest`` does not extend ``last``."""
    problem = checkpoint_problem(latest, service_keys)
    if problem is not None:
        raise Alarm(problem)
    if latest.format != CHECKPOINT_FORMAT_V2:
        raise Alarm(f"checkpoint {latest.sequence} signs no history: it cannot be witnessed")
    if last is not None:
        if latest.origin != last.origin:
            raise Alarm(f"checkpoint of another log ({latest.origin!r}, not {last.origin!r})")
        if latest.sequence < last.sequence:
            raise Alarm(
                f"the service went back: checkpoint {latest.sequence} after {last.sequence}"
            )
        if latest.sequence == last.sequence:
            if latest != last:
                raise Alarm(f"two different checkpoints {latest.sequence}: the log was rewritten")
            return None
        proof = fetch_proof(last.sequence, latest.sequence)
        if proof.first != last or proof.second != latest:
            raise Alarm("the consistency proof is not between the checkpoints witnessed")
        problem = consistency_problem(proof, service_keys)
        if problem is not None:
            raise Alarm(problem)
    at = now or datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")
    signature = witness.sign(witness_message(latest, at, witness.key_id))
    return Witnessed(
        checkpoint=latest,
        witnessed_at=at,
        witness_key_id=witness.key_id,
        witness_signature=base64.b64encode(signature).decode(),
    )


_line_decoder = msgspec.json.Decoder(Witnessed)


def last_witnessed(path: Path) -> Checkpoint | None:
    """The checkpoint of the file's last complete line (None: nothing witnessed yet)."""
    if not path.exists():
        return None
    last = None
    with path.open("rb") as handle:
        for line in handle:
            if line.endswith(b"\n"):
                last = line
    return None if last is None else _line_decoder.decode(last).checkpoint


def append(path: Path, line: Witnessed) -> None:
    """Append one line and make it durable (the file is only ever appended to)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("ab") as handle:
        handle.write(msgspec.json.encode(line) + b"\n")
        handle.flush()
        os.fsync(handle.fileno())


def _http_source(
    base: str,
) -> tuple[Callable[[], Checkpoint], Callable[[int, int], ConsistencyProof]]:
    client = httpx.Client(base_url=base, timeout=10)

    def latest() -> Checkpoint:
        answer = client.get("/api/checkpoints/latest")
        answer.raise_for_status()
        return msgspec.json.decode(answer.content, type=Checkpoint)

    def proof(first: int, second: int) -> ConsistencyProof:
        answer = client.get(
            "/api/checkpoints/consistency", params={"first": first, "second": second}
        )
        if answer.status_code == 404:
            raise Alarm(f"the service has no consistency proof from {first} to {second}")
        answer.raise_for_status()
        return msgspec.json.decode(answer.content, type=ConsistencyProof)

    return latest, proof


@click.command("witness")
@click.option("--service", "base", required=True, help="The service's address (http://…).")
@click.option(
    "--keys",
    "keys_file",
    required=True,
    type=click.Path(exists=True, dir_okay=False, path_type=Path),
    help="The service's public keys, pinned (JSON of GET /api/keys, saved once).",
)
@click.option(
    "--key",
    "key_file",
    required=True,
    type=click.Path(dir_okay=False, path_type=Path),
    help="The witness's own Ed25519 key (PKCS#8 PEM; made if missing).",
)
@click.option(
    "--out",
    "out",
    required=True,
    type=click.Path(dir_okay=False, path_type=Path),
    help="The witness's append-only file (one countersigned checkpoint a line).",
)
@click.option("--every", type=float, default=0.0, help="Seconds between rounds (0: one round).")
def witness_command(base: str, keys_file: Path, key_file: Path, out: Path, every: float) -> None:
    """Fetch the latest checkpoint, check that it extends the one witnessed last,
    and countersign it into OUT. Exit 1 at the first alarm."""
    service_keys = Keyring.from_json(keys_file.read_bytes())
    witness, _ = load_or_create_signing_key(key_file)
    latest, proof = _http_source(base)
    while True:
        try:
            line = step(latest(), last_witnessed(out), proof, service_keys, witness)
        except Alarm as alarm:
            click.echo(f"ALARM    {alarm}")
            sys.exit(1)
        except (httpx.HTTPError, msgspec.DecodeError) as exc:  # the service is away: try later
            click.echo(f"no answer from {base}: {exc}")
            if not every:
                sys.exit(2)
        else:
            if line is None:
                click.echo("unchanged: the latest checkpoint is the one witnessed last")
            else:
                append(out, line)
                c = line.checkpoint
                click.echo(
                    f"witnessed checkpoint {c.sequence} ({c.history_size} leaves) of {c.origin} "
                    f"with key {witness.key_id}"
                )
        if not every:
            return
        time.sleep(every)


if __name__ == "__main__":
    witness_command()
