"""Replays over HTTP: a finished match's archive, its frames, its portable
record, and checking an imported record.

Archives are built by the archives projection of the workers
(workers/projections/archives.py); a request that finds none, or one older than
the log (a dispute filed after the end, an annulment, before the projection
caught up), builds it on the spot and stores it, with the workers' own loader
and upsert (service/replays/store.py). Everything a viewer sees
comes from the engine's ``view``/``redact``: the public frames for anyone,
the omniscient frames for admins only. Ratings before and after the match are
read from the ratings projection at request time (they change when an earlier
match is annulled, so the stored archive does not hold them).
"""

from __future__ import annotations

import logging
from collections import OrderedDict
from typing import Annotated, Any, Literal

import msgspec
from anyio import to_thread
from litestar import Request, Response, get, post
from litestar.datastructures import State
from litestar.params import Parameter, QueryParameter
from psycopg_pool import AsyncConnectionPool

from schemas.bounds import INT32_MAX
from schemas.events import DisputeFiled, MatchCreated
from schemas.rules import MatchTerms
from schemas.views import EventView, MatchView, Viewer
from service.accounts.players import Player, caller_of
from service.api.errors import problem_response
from service.audit.record_evidence import record_evidence, signed_receipt, unsigned
from service.engine import redact
from service.engine.redact import sight
from service.errors import MatchaError, NotFound
from service.matches import MatchFacts, check_record_export, replay_viewer
from service.replays import (
    Headers,
    MatchRecord,
    RecordCheck,
    ReplayArchive,
    build_now_async,
    check_record,
    current_archive_async,
    decode_archive,
    decode_record,
    record_of_events,
    with_ratings_async,
)
from service.replays.signatures import signed_checks

log = logging.getLogger("matcha.api.replays")

CACHE_SIZE = 64
"""Decoded archives kept in memory, so stepping through frames does not
decompress and decode the whole archive for every frame."""

ReplayView = Literal["public", "omniscient"]


class FrameSummary(msgspec.Struct, frozen=True, kw_only=True):
    version: int
    type: str
    hand: int
    round: int


class Replay(msgspec.Struct, frozen=True, kw_only=True):
    format: str
    headers: Headers
    frames: int
    summary: list[FrameSummary]
    sha256: str
    """Of the stored (gzip) archive: rebuilding it from the log gives the same bytes."""
    archive_bytes: int


class ReplayFrame(msgspec.Struct, frozen=True, kw_only=True):
    match_id: str
    n: int
    """1-based: the view after the match's ``n``-th event."""
    of: int
    viewer: ReplayView
    event: EventView
    view: MatchView


class _Cached(msgspec.Struct, frozen=True, kw_only=True):
    sha256: bytes
    archive: ReplayArchive
    size: int


_cache: OrderedDict[str, _Cached] = OrderedDict()


async def load_archive(pool: AsyncConnectionPool, match_id: str, *, lagging: Any = None) -> _Cached:
    """The match's current archive: stored if it is the log's as it stands, else
    built now and stored (``service.replays.store``: the workers' one loader and upsert).

    ``lagging`` (``ReadRouting.pool_that_may_lag``: the standby's routing when one is
    configured) is asked first: an archive the workers stored is a read that may lag
    (a replay is of a finished match; what follows its end shows within the lag
    bound). Only a match the standby holds no current archive of is built, on the
    primary."""
    current = None
    if lagging is not None and lagging is not pool:
        async with lagging.connection() as conn:
            current = await current_archive_async(conn, match_id)
    if current is None:
        async with pool.connection() as conn:
            current = await current_archive_async(conn, match_id)
            if current is None:
                built = await build_now_async(conn, match_id)
                current = built.data, built.sha256
    data, digest = current
    cached = _cache.get(match_id)
    if cached is not None and cached.sha256 == digest:
        _cache.move_to_end(match_id)
        return cached
    archive = await to_thread.run_sync(decode_archive, data)
    cached = _Cached(sha256=digest, archive=archive, size=len(data))
    _cache[match_id] = cached
    while len(_cache) > CACHE_SIZE:
        _cache.popitem(last=False)
    return cached


def record_facts(record: MatchRecord) -> MatchFacts:
    """The facts of a recorded match: its creation and its terms (an old match's
    record carries its ladder's hide-hands setting in its headers)."""
    created = record.events[0].event
    if not isinstance(created, MatchCreated):
        raise NotFound("This record does not begin with the match's creation.")
    terms = created.terms or MatchTerms(hide_hands_in_replay=record.headers.hide_hands_in_replay)
    return MatchFacts(created=created, terms=terms)


def shown_headers(headers: Headers, facts: MatchFacts, viewer: Viewer) -> Headers:
    """The replay's headers as ``viewer`` may read them: the seed only where the
    engine's table lets that viewer see it (not on a hide-hands match, but to admins)."""
    over = headers.annulled or headers.result != "*"
    if sight(viewer, over, facts.terms.hide_hands_in_replay).seed:
        return headers
    return msgspec.structs.replace(headers, seed=None)


@get(
    "/api/matches/{match_id:str}/replay",
    operation_id="getReplay",
    tags=["replays"],
    security=[],
)
async def get_replay(
    match_id: str, pool: AsyncConnectionPool, viewer: Player | None, state: State
) -> Replay:
    """A finished match's replay: headers (PGN-like tags) and a summary of its frames."""
    cached = await load_archive(pool, match_id, lagging=state.reads.pool_that_may_lag())
    archive = cached.archive
    facts = record_facts(archive.record)
    who = replay_viewer(facts, caller_of(viewer))
    async with pool.connection() as conn:
        headers = shown_headers(await with_ratings_async(conn, archive.record.headers), facts, who)
    return Replay(
        format=archive.format,
        headers=headers,
        frames=len(archive.frames),
        summary=[
            FrameSummary(
                version=f.version, type=f.type, hand=f.omniscient.hand, round=f.omniscient.round
            )
            for f in archive.frames
        ],
        sha256=cached.sha256.hex(),
        archive_bytes=cached.size,
    )


@get(
    "/api/matches/{match_id:str}/replay/frames/{n:int}",
    operation_id="getReplayFrame",
    tags=["replays"],
    security=[],
)
async def get_frame(
    match_id: str,
    n: Annotated[int, Parameter(ge=1, le=INT32_MAX)],
    pool: AsyncConnectionPool,
    viewer: Player | None,
    state: State,
    view: Annotated[ReplayView, QueryParameter()] = "public",
) -> ReplayFrame:
    """Frame ``n`` (1-based): the event and what a viewer sees after it.
    ``?view=omniscient`` (admins) shows everything at every step."""
    archive = (await load_archive(pool, match_id, lagging=state.reads.pool_that_may_lag())).archive
    facts = record_facts(archive.record)
    who = replay_viewer(facts, caller_of(viewer), omniscient=view == "omniscient")
    frames = archive.frames
    if not 1 <= n <= len(frames):
        raise NotFound(f"This replay has frames 1 to {len(frames)}.", code="no_such_frame")
    frame = frames[n - 1]
    return ReplayFrame(
        match_id=match_id,
        n=n,
        of=len(frames),
        viewer="omniscient" if who == "omniscient" else "public",
        event=redact(
            archive.record.events[n - 1].event,
            who,
            match_over=True,
            hide_hands_in_replay=facts.terms.hide_hands_in_replay,
        ),
        view=frame.omniscient if who == "omniscient" else frame.public_view(),
    )


@get(
    "/api/matches/{match_id:str}/record",
    operation_id="exportMatchRecord",
    tags=["replays"],
    security=[],
)
async def export_record(
    request: Request[Any, Any, Any],
    match_id: str,
    pool: AsyncConnectionPool,
    viewer: Player | None,
) -> Response[Any]:
    """The portable match record (headers + every event with its chain hashes),
    with the service's final receipt, its public keys, the match's checkpoint
    proof and the audit's ``problems`` (``matcha verify`` checks it offline).

    It holds every card, as anyone may see once the match is over; on a ladder
    that hides hands in replays only an admin may export it. Disputes are
    private to their filer and admins, so anyone else gets the record up to the
    first dispute (its version in the ``Matcha-Record-Withheld-From`` header);
    the match page and the log still show the dispute's state and any annulment.
    A log the service did not sign as it stands, or one that no longer folds
    into a match, is answered with a 409 problem+json listing what the audit
    found (``errors``), never a 5xx.
    """
    evidence = getattr(request.app.state, "evidence", None)
    async with pool.connection() as conn:
        found = await record_evidence(conn, match_id, evidence)
    problems = found.report.verdict.reasons
    if unsigned(found.report):
        return _tampered(
            request, "The service did not sign this match's log as it stands", problems
        )
    try:
        record = (await load_archive(pool, match_id)).archive.record
    except MatchaError:
        raise
    except Exception as exc:  # a forged log can break the fold anywhere: report, never 500
        log.warning("the record of %s cannot be built: %s", match_id, exc)
        return _tampered(request, "This match's log no longer folds into a match", problems)
    caller = caller_of(viewer)
    check_record_export(record_facts(record), caller)
    admin = caller.admin
    withheld = None if admin else _first_dispute(record)
    if withheld is not None:
        record = await to_thread.run_sync(_record_before, record, withheld)
    async with pool.connection() as conn:
        headers = await with_ratings_async(conn, record.headers)
    headers_out = {} if withheld is None else {"Matcha-Record-Withheld-From": str(withheld)}
    receipt, proof = found.receipt, found.checkpoint
    if withheld is not None:
        # what this record holds is signed too: the last signed head before the withheld part
        if receipt is not None and receipt.version >= withheld:
            async with pool.connection() as conn:
                receipt = await signed_receipt(conn, match_id, before=withheld)
        if proof is not None and proof.leaf.version >= withheld:
            proof = None
    out = msgspec.structs.replace(
        record,
        headers=headers,
        receipt=receipt,
        keys=found.keys,
        checkpoint=proof,
        problems=problems,
    )
    return Response(out, headers=headers_out)


def _tampered(request: Request[Any, Any, Any], why: str, problems: list[str]) -> Response[Any]:
    return problem_response(
        request,
        409,
        "match_log_inconsistent",
        f"{why}: an admin audit names each problem (GET /api/admin/matches/{{id}}/audit).",
        errors=[{"field": None, "message": p} for p in problems] or None,
    )


def _first_dispute(record: MatchRecord) -> int | None:
    """The version of the record's first dispute, whose reason only its filer and
    admins may read (as in the match log); None when nobody disputed the match."""
    return next((e.version for e in record.events if isinstance(e.event, DisputeFiled)), None)


def _record_before(record: MatchRecord, version: int) -> MatchRecord:
    """The record of the events before ``version``: a prefix of a hash chain still
    verifies on its own, and its headers are rebuilt from the events it holds, so
    ``POST /api/records/check`` accepts it. A dispute's event cannot be redacted
    in place: its hash covers its reason."""
    kept, _ = record_of_events(
        record.headers.match_id,
        [e for e in record.events if e.version < version],
        names={p.id: p.name for p in record.headers.players if p.name},
        ladder_name=record.headers.ladder,
        hide_hands_in_replay=record.headers.hide_hands_in_replay,
    )
    return kept


@post(
    "/api/records/check",
    operation_id="checkMatchRecord",
    tags=["replays"],
    security=[],
    status_code=200,
)
async def import_record(request: Request[Any, Any, Any]) -> RecordCheck:
    """Check a match record: its hash chain, a re-fold of its events through the
    engine, its deals against its seed, and the receipt and checkpoint proof it
    carries against the service's keys; and return its frames when it holds up."""
    record = decode_record(await request.body())
    checked = await to_thread.run_sync(check_record, record)
    evidence = getattr(request.app.state, "evidence", None)
    if evidence is not None and (record.receipt is not None or record.checkpoint is not None):
        # what the record says the service signed must verify with the service's keys
        _, problems = signed_checks(record, [], evidence.keyring, require_receipt=False)
        if problems:
            checked = msgspec.structs.replace(
                checked, ok=False, problems=[*checked.problems, *problems], frames=[]
            )
    return checked


ROUTES = [get_replay, get_frame, export_record, import_record]
