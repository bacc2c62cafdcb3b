"""Signed checkpoints: one signed Merkle root over every match's latest signed head.

A checkpoint says "at global position P, match m was at (version, hash), for
every m": the leaves are ``field(match_id) + field(str(version)) +
field(blinded)`` (``blinded``: the head's hash blinded with the match's salt,
``service.store.heads``, so a published proof tells nothing about a live
match's hidden cards), ordered by match id and hashed as RFC 6962 does
(``service.evidence.merkle``); the service signs

    b"matcha-checkpoint-v1" + field(origin) + field(str(sequence))
    + field(str(tree_size)) + field(root) + field(str(position))
    + field(issued_at) + field(key_id)

Since issue 29 a checkpoint is ``matcha-checkpoint/2``: the message's domain is
``matcha-checkpoint-v2`` and it ends with ``field(str(history_size)) +
field(history_root)``, the RFC 9162 head of the **history**: every leaf the file's
lines ever appended, in order. That list only grows, so a consistency proof
(``CheckpointLog.consistency``, ``merkle.History``) shows that a later checkpoint
extends an earlier one: nothing either covered was removed or rewritten between
them (docs/evidence-spec.md §6.1).

``origin`` names the event store (``<database>-<store id>``, migration 0025),
so a checkpoint of one store is never taken for another's.

Each checkpoint is appended, with the leaves that changed since the previous
one, as one JSON line to an append-only file under the data folder (the
database role cannot write there), and, in deploy/, to an object store. The
whole leaf set of the latest checkpoint is the fold of the file's lines, so
the audit can prove one match's leaf with a short inclusion proof and compare
it with the table: a log cut or rewritten after a checkpoint no longer holds
the checkpointed (version, hash). Only heads that carry a valid service
signature become leaves: a forged row never enters a checkpoint.
"""

from __future__ import annotations

import asyncio
import base64
import binascii
import contextlib
import fcntl
import logging
import os
from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import msgspec
from msgspec import UNSET, UnsetType
from psycopg import AsyncConnection

from service.evidence import merkle
from service.evidence.keys import Keyring, SigningKey
from service.store import chain, matchlog
from service.store.events import head_is_signed, unsigned_up_to
from service.store.heads import blinded, head_salt
from service.store.ops import run_async

log = logging.getLogger("matcha.evidence.checkpoints")

CHECKPOINT_FORMAT = "matcha-checkpoint/1"
CHECKPOINT_FORMAT_V2 = "matcha-checkpoint/2"
"""Also signs the history tree (every leaf ever checkpointed, in order), whose
consistency proofs show that a later checkpoint extends an earlier one."""
_DOMAIN = b"matcha-checkpoint-v1"
_DOMAIN_V2 = b"matcha-checkpoint-v2"


class Checkpoint(msgspec.Struct, frozen=True, kw_only=True):
    format: str = CHECKPOINT_FORMAT
    origin: str
    """The event store it covers: ``<database>-<store id>``."""
    sequence: int
    """1, 2, 3 ... in this log."""
    tree_size: int
    root: str
    """RFC 6962 tree head, hex."""
    position: int
    """Covers every committed event up to this global position."""
    issued_at: str
    key_id: str
    signature: str
    """Ed25519 over ``checkpoint_message``, standard base64."""
    history_size: int | UnsetType = UNSET
    """``matcha-checkpoint/2``: how many leaves the checkpoint log has appended so far
    (each line's ``changed`` leaves, in file order), and the RFC 9162 head of that
    append-only list. Unset (and absent from the JSON) in a ``/1`` checkpoint."""
    history_root: str | UnsetType = UNSET


class Leaf(msgspec.Struct, frozen=True, array_like=True):
    match_id: str
    version: int
    hash: str
    """The head's blinded hash (``heads.blinded``), hex."""


class CheckpointLogEntry(msgspec.Struct, frozen=True, kw_only=True):
    """One line of the checkpoint log."""

    checkpoint: Checkpoint
    changed: list[Leaf]


class ConsistencyProof(msgspec.Struct, frozen=True, kw_only=True):
    """Two signed checkpoints and the RFC 9162 consistency proof that the second's
    history tree extends the first's: nothing checkpointed between them was removed
    or rewritten (``GET /api/checkpoints/consistency``)."""

    first: Checkpoint
    second: Checkpoint
    path: list[str]
    """RFC 9162 §2.1.4 ``PROOF(first.history_size, D[0:second.history_size])``, hex."""


class InclusionProof(msgspec.Struct, frozen=True, kw_only=True):
    """One match's leaf in a checkpoint, and the audit path to its root."""

    checkpoint: Checkpoint
    leaf: Leaf
    leaf_index: int
    path: list[str]
    """Sibling hashes from the leaf up, hex (RFC 9162 §2.1.3)."""


def checkpoint_message(
    *,
    origin: str,
    sequence: int,
    tree_size: int,
    root: bytes,
    position: int,
    issued_at: str,
    key_id: str,
    history_size: int | None = None,
    history_root: bytes | None = None,
) -> bytes:
    """What a checkpoint signs; with a history, the ``/2`` message (its own domain)."""
    v2 = history_size is not None and history_root is not None
    return b"".join(
        (
            _DOMAIN_V2 if v2 else _DOMAIN,
            chain.field(origin.encode()),
            chain.field(str(sequence).encode()),
            chain.field(str(tree_size).encode()),
            chain.field(root),
            chain.field(str(position).encode()),
            chain.field(issued_at.encode()),
            chain.field(key_id.encode()),
            *(
                (chain.field(str(history_size).encode()), chain.field(history_root))
                if v2 and history_root is not None
                else ()
            ),
        )
    )


def history_leaf(leaf: Leaf) -> bytes:
    """A checkpointed leaf's hash in the history tree: the same as in the match tree."""
    return merkle.leaf_hash(leaf_data(leaf))


def leaf_data(leaf: Leaf) -> bytes:
    return (
        chain.field(leaf.match_id.encode())
        + chain.field(str(leaf.version).encode())
        + chain.field(bytes.fromhex(leaf.hash))
    )


def tree_leaves(leaves: dict[str, Leaf]) -> tuple[list[str], list[bytes]]:
    """Match ids in tree order (sorted) and their leaf hashes."""
    ids = sorted(leaves)
    return ids, [merkle.leaf_hash(leaf_data(leaves[m])) for m in ids]


def sign_checkpoint(
    signer: SigningKey,
    *,
    origin: str,
    sequence: int,
    leaves: dict[str, Leaf],
    position: int,
    history: merkle.History | None = None,
    issued_at: str | None = None,
) -> Checkpoint:
    """Sign the tree of ``leaves``; with ``history`` (already holding this checkpoint's
    changed leaves) a ``matcha-checkpoint/2`` that signs its head too."""
    _, hashes = tree_leaves(leaves)
    head = merkle.root(hashes)
    issued_at = issued_at or datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")
    history_root = history.root() if history is not None else None
    message = checkpoint_message(
        origin=origin,
        sequence=sequence,
        tree_size=len(hashes),
        root=head,
        position=position,
        issued_at=issued_at,
        key_id=signer.key_id,
        history_size=len(history) if history is not None else None,
        history_root=history_root,
    )
    return Checkpoint(
        format=CHECKPOINT_FORMAT if history is None else CHECKPOINT_FORMAT_V2,
        history_size=UNSET if history is None else len(history),
        history_root=UNSET if history_root is None else history_root.hex(),
        origin=origin,
        sequence=sequence,
        tree_size=len(hashes),
        root=head.hex(),
        position=position,
        issued_at=issued_at,
        key_id=signer.key_id,
        signature=base64.b64encode(signer.sign(message)).decode(),
    )


def checkpoint_problem(checkpoint: Checkpoint, keyring: Keyring) -> str | None:
    """Why ``checkpoint`` is not the service's signature (None: it is)."""
    v2 = checkpoint.format == CHECKPOINT_FORMAT_V2
    if checkpoint.format not in (CHECKPOINT_FORMAT, CHECKPOINT_FORMAT_V2):
        return f"unknown checkpoint format {checkpoint.format!r}"
    if v2 and (
        not isinstance(checkpoint.history_size, int) or not isinstance(checkpoint.history_root, str)
    ):
        return f"checkpoint {checkpoint.sequence} is a /2 checkpoint without its history"
    try:
        root = bytes.fromhex(checkpoint.root)
        signature = base64.b64decode(checkpoint.signature, validate=True)
        history_root = bytes.fromhex(checkpoint.history_root) if v2 else None  # type: ignore[arg-type]
    except (ValueError, binascii.Error):
        return "the checkpoint's root or signature is not valid hex / base64"
    message = checkpoint_message(
        origin=checkpoint.origin,
        sequence=checkpoint.sequence,
        tree_size=checkpoint.tree_size,
        root=root,
        position=checkpoint.position,
        issued_at=checkpoint.issued_at,
        key_id=checkpoint.key_id,
        history_size=checkpoint.history_size if v2 else None,  # type: ignore[arg-type]
        history_root=history_root,
    )
    if not keyring.verify(checkpoint.key_id, message, signature):
        return f"checkpoint {checkpoint.sequence} does not verify with key {checkpoint.key_id!r}"
    return None


def proof_problem(proof: InclusionProof, keyring: Keyring) -> str | None:
    """Why ``proof`` does not show its leaf in a checkpoint the service signed."""
    problem = checkpoint_problem(proof.checkpoint, keyring)
    if problem is not None:
        return problem
    try:
        path = [bytes.fromhex(p) for p in proof.path]
        leaf = merkle.leaf_hash(leaf_data(proof.leaf))
        head = bytes.fromhex(proof.checkpoint.root)
    except ValueError:
        return "the inclusion proof is not valid hex"
    if not merkle.verify_inclusion(leaf, proof.leaf_index, proof.checkpoint.tree_size, path, head):
        return f"the leaf of {proof.leaf.match_id} is not in checkpoint {proof.checkpoint.sequence}"
    return None


def consistency_problem(proof: ConsistencyProof, keyring: Keyring) -> str | None:
    """Why ``proof`` does not show that its second checkpoint extends its first."""
    first, second = proof.first, proof.second
    for checkpoint in (first, second):
        problem = checkpoint_problem(checkpoint, keyring)
        if problem is not None:
            return problem
        if checkpoint.format != CHECKPOINT_FORMAT_V2:
            return f"checkpoint {checkpoint.sequence} signs no history (a /1 checkpoint)"
    if first.origin != second.origin:
        return f"the checkpoints are of two logs ({first.origin!r}, {second.origin!r})"
    if first.sequence > second.sequence:
        return f"checkpoint {first.sequence} comes after {second.sequence}"
    assert isinstance(first.history_size, int) and isinstance(second.history_size, int)
    assert isinstance(first.history_root, str) and isinstance(second.history_root, str)
    try:
        path = [bytes.fromhex(p) for p in proof.path]
        roots = bytes.fromhex(first.history_root), bytes.fromhex(second.history_root)
    except ValueError:
        return "the consistency proof is not valid hex"
    if not merkle.verify_consistency(
        first.history_size, second.history_size, roots[0], roots[1], path
    ):
        return (
            f"checkpoint {second.sequence} does not extend checkpoint {first.sequence}: "
            "the log was cut or rewritten between them"
        )
    return None


_entry_decoder = msgspec.json.Decoder(CheckpointLogEntry)
_encoder = msgspec.json.Encoder()


@dataclass
class CheckpointLog:
    """The append-only checkpoint file, and the leaf set its lines fold into.

    Several processes may share one file: every write happens under an
    exclusive ``flock``, after reading the lines others appended meanwhile.
    """

    path: Path
    origin: str
    leaves: dict[str, Leaf] = field(default_factory=dict)
    latest: Checkpoint | None = None
    history: merkle.History = field(default_factory=merkle.History)
    """Every line's changed leaves, in file order: the append-only history tree."""
    signed: dict[int, Checkpoint] = field(default_factory=dict)
    """Every checkpoint of the file by sequence (consistency proofs between any two)."""
    _offset: int = 0
    _inode: int | None = None

    @contextlib.contextmanager
    def _locked(self) -> Iterator[Any]:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        fd = os.open(self.path, os.O_RDWR | os.O_CREAT | os.O_APPEND, 0o644)
        with os.fdopen(fd, "r+b") as handle:
            fcntl.flock(handle, fcntl.LOCK_EX)
            try:
                yield handle
            finally:
                fcntl.flock(handle, fcntl.LOCK_UN)

    def _catch_up(self, handle: Any) -> None:
        inode = os.fstat(handle.fileno()).st_ino
        if inode != self._inode:  # a new file (or the first read): start over
            self.leaves, self.latest, self._offset, self._inode = {}, None, 0, inode
            self.history, self.signed = merkle.History(), {}
        handle.seek(self._offset)
        for line in handle:
            if not line.endswith(b"\n"):
                break  # a line still being written by a process that died: never complete
            self._offset += len(line)
            try:
                entry = _entry_decoder.decode(line)
            except msgspec.DecodeError:
                log.error("skipping an unreadable line in %s", self.path)
                continue
            for leaf in entry.changed:
                self.leaves[leaf.match_id] = leaf
                self.history.append(history_leaf(leaf))
            self.latest = entry.checkpoint
            self.signed[entry.checkpoint.sequence] = entry.checkpoint

    def refresh(self) -> None:
        """Read what other processes appended (a reader that never writes)."""
        if not self.path.exists():
            return
        with self.path.open("rb") as handle:
            fcntl.flock(handle, fcntl.LOCK_SH)
            try:
                self._catch_up(handle)
            finally:
                fcntl.flock(handle, fcntl.LOCK_UN)

    def consistency(self, first: int, second: int) -> ConsistencyProof | None:
        """The proof that checkpoint ``second`` extends ``first`` (by sequence; None:
        no such checkpoints, or one of them signs no history)."""
        a, b = self.signed.get(first), self.signed.get(second)
        if a is None or b is None or a.sequence > b.sequence:
            return None
        if not isinstance(a.history_size, int) or not isinstance(b.history_size, int):
            return None
        if not 0 <= a.history_size <= b.history_size <= len(self.history):
            return None  # a file that disagrees with its own lines proves nothing
        path = self.history.consistency_proof(a.history_size, b.history_size)
        return ConsistencyProof(first=a, second=b, path=[h.hex() for h in path])

    def proof(self, match_id: str) -> InclusionProof | None:
        """The match's leaf in the latest checkpoint, with its audit path (None: not in it)."""
        if self.latest is None or match_id not in self.leaves:
            return None
        ids, hashes = tree_leaves(self.leaves)
        index = ids.index(match_id)
        return InclusionProof(
            checkpoint=self.latest,
            leaf=self.leaves[match_id],
            leaf_index=index,
            path=[h.hex() for h in merkle.inclusion_proof(hashes, index)],
        )


async def store_origin(conn: AsyncConnection[Any]) -> str:
    """``<database>-<first 8 of the store id>``: what a checkpoint log belongs to."""
    cur = await conn.execute(
        "SELECT current_database(), (SELECT min(store_id) FROM evidence_epoch)"
    )
    row = await cur.fetchone()
    assert row is not None
    return f"{row[0]}-{str(row[1] or 'none')[:8]}"


async def checkpoint_log_for(conn: AsyncConnection[Any], folder: Path) -> CheckpointLog:
    """The checkpoint log of the event store ``conn`` reaches, in ``folder``."""
    origin = await store_origin(conn)
    return CheckpointLog(folder / f"{origin}.jsonl", origin)


BARRIER_TRY_S = 0.25
"""How long the checkpointer tries the barrier without queueing for it."""
BARRIER_WAIT_S = 5.0
"""After the tries, how long the checkpointer waits for the barrier at most."""


async def _committed_high(conn: AsyncConnection[Any]) -> int:
    """The last position handed out, once every append that may own one has ended
    (the match log's barrier: docs/event-store.md "Global order").

    The exclusive lock is first *tried* (never joining the lock's queue) for up
    to ``BARRIER_TRY_S`` before it is waited for: a waiting exclusive request
    makes every new append's shared request queue behind it, so a checkpoint
    that waited on one slow append stalled every command of the process, about
    once a second. The wait is bounded: a checkpoint that cannot have the
    barrier within ``BARRIER_WAIT_S`` gives up (psycopg raises LockNotAvailable;
    the checkpointer tries again at its next tick) rather than let every append
    queue behind it. Taken either way, the lock means the same."""
    return await run_async(
        conn, matchlog.committed_high(try_for=BARRIER_TRY_S, wait_at_most=BARRIER_WAIT_S)
    )


async def changed_leaves(
    conn: AsyncConnection[Any], keyring: Keyring, after: int, high: int
) -> tuple[dict[str, Leaf], int]:
    """The signed heads committed in ``(after, high]``, latest per match, and how
    many rows were left out because their signature does not verify.

    The rows are read on the event loop and their signatures checked in a
    thread: one Ed25519 verification per match that moved (hundreds after two
    seconds of play) held the loop, and every socket of the process, for tens
    of milliseconds."""
    legacy: list[matchlog.LegacyHead] = []
    if after == 0:
        epoch = await unsigned_up_to(conn)
        if epoch:  # rows from before signatures: trusted as they stand at the first checkpoint
            legacy = await run_async(conn, matchlog.heads_up_to(epoch))
    # The latest signed head of each match that moved. (A forged latest head hides
    # nothing: it is left out, and the audit names it.)
    rows = await run_async(conn, matchlog.latest_signed_heads(after, high))
    return await asyncio.to_thread(_verified_leaves, keyring, legacy, rows)


def _verified_leaves(
    keyring: Keyring, legacy: list[matchlog.LegacyHead], rows: list[matchlog.SignedRow]
) -> tuple[dict[str, Leaf], int]:
    found: dict[str, Leaf] = {}
    rejected = 0
    for match_id, version, hash_, seed in legacy:
        blind = blinded(head_salt(seed), hash_)
        found[match_id] = Leaf(match_id, version, blind.hex())
    for row in rows:
        salt = head_salt(row.seed)
        if not head_is_signed(keyring, row, salt):
            rejected += 1
            continue
        match_id, version = row.match_id, row.version
        known = found.get(match_id)
        if known is None or known.version < version:
            found[match_id] = Leaf(match_id, version, blinded(salt, row.hash).hex())
    return found, rejected


async def write_checkpoint(
    conn: AsyncConnection[Any],
    checkpoints: CheckpointLog,
    signer: SigningKey,
    keyring: Keyring,
    *,
    force: bool = False,
) -> CheckpointLogEntry | None:
    """Sign and append a checkpoint if any match moved since the latest one
    (``force``: even if none did). Returns the line written, or None.

    The database is read before the file is locked (no process waits on the
    lock for a query); under the lock the lines others appended meanwhile are
    read first, and only leaves newer than theirs are added.
    """
    high = await _committed_high(conn)
    await asyncio.to_thread(checkpoints.refresh)
    after = checkpoints.latest.position if checkpoints.latest else 0
    if high <= after and not force and checkpoints.latest is not None:
        return None
    found, rejected = await changed_leaves(conn, keyring, after, max(high, after))
    if rejected:
        log.error("%d signed heads after position %d do not verify: left out", rejected, after)
    # The file lock (another process may hold it), the tree, the signature and
    # the fsync: in a thread, never on the loop that serves the sockets.
    return await asyncio.to_thread(
        _append_checkpoint, checkpoints, signer, found, high, force=force
    )


def _append_checkpoint(
    checkpoints: CheckpointLog,
    signer: SigningKey,
    found: dict[str, Leaf],
    high: int,
    *,
    force: bool,
) -> CheckpointLogEntry | None:
    with checkpoints._locked() as handle:
        checkpoints._catch_up(handle)
        latest = checkpoints.latest
        if latest is not None and latest.position >= high and not force:
            return None  # another process covered it meanwhile
        changed = sorted(
            (
                leaf
                for leaf in found.values()
                if (old := checkpoints.leaves.get(leaf.match_id)) is None
                or old.version < leaf.version
            ),
            key=lambda x: x.match_id,
        )
        if not changed and not force and latest is not None:
            return None
        leaves = dict(checkpoints.leaves)
        leaves.update((leaf.match_id, leaf) for leaf in changed)
        position = max(high, latest.position if latest else 0)
        try:
            # The history grows by this line's leaves before it is signed; a write
            # that fails leaves it ahead of the file, so the next read starts over.
            for leaf in changed:
                checkpoints.history.append(history_leaf(leaf))
            checkpoint = sign_checkpoint(
                signer,
                origin=checkpoints.origin,
                sequence=latest.sequence + 1 if latest else 1,
                leaves=leaves,
                position=position,
                history=checkpoints.history,
            )
            entry = CheckpointLogEntry(checkpoint=checkpoint, changed=changed)
            line = _encoder.encode(entry) + b"\n"
            handle.write(line)
            handle.flush()
            os.fsync(handle.fileno())
        except BaseException:
            checkpoints._inode = None
            raise
        checkpoints._offset += len(line)
        checkpoints.leaves, checkpoints.latest = leaves, checkpoint
        checkpoints.signed[checkpoint.sequence] = checkpoint
    return entry
