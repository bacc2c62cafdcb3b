"""The audit report as text, for ``matcha audit`` (the JSON form is ``to_json``)."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import msgspec

from schemas.events import Event, encode_event
from service.audit.report import AuditReport, Finding

_decoder: msgspec.json.Decoder[Event] = msgspec.json.Decoder(Event)


def _when(at: datetime) -> str:
    return at.astimezone(UTC).strftime("%Y-%m-%d %H:%M:%S.%f")[:-3] + "Z"


def _json(value: Any) -> str:
    return msgspec.json.encode(value).decode()


def _data(data: dict[str, Any]) -> str:
    """The event's fields in their declared order (jsonb keeps no order), less the tag."""
    try:
        canonical = msgspec.json.decode(encode_event(_decoder.decode(msgspec.json.encode(data))))
    except msgspec.DecodeError:
        canonical = None
    shown = canonical if canonical == data else data  # never hide an extra field
    return _json({k: v for k, v in shown.items() if k not in ("type", "v")})


def _finding(f: Finding | None, indent: str = "    ") -> list[str]:
    if f is None:
        return []
    at = f"version {f.version}" if f.version is not None else "the match"
    lines = [
        f"{indent}first at {at}" + (f" ({f.event_type})" if f.event_type else "") + f": {f.problem}"
    ]
    if f.logged is not None or f.expected is not None:
        lines.append(f"{indent}  logged:   {_json(f.logged)}")
        lines.append(f"{indent}  expected: {_json(f.expected)}")
    return lines


def render(report: AuditReport, *, log: bool = True) -> str:
    r = report
    out: list[str] = []
    seats = ", ".join(f"seat {i} {p}" for i, p in enumerate(r.players))
    out.append(
        f"Audit of match {r.match_id} ({r.status}"
        + (f", ladder {r.ladder_id}" if r.ladder_id else "")
        + f"): {seats}"
    )
    out.append(f"Audited at {_when(r.audited_at)}")
    if log:
        out.append("")
        out.append(f"Log ({len(r.events)} events, omniscient):")
        out.append(f"  {'ver':>4}  {'recorded at':<24}  {'actor':<16}  {'type':<16}  hash  data")
        for e in r.events:
            out.append(
                f"  {e.version:>4}  {_when(e.recorded_at):<24}  {(e.actor or '-')[:16]:<16}  "
                f"{e.type:<16}  {'ok' if e.hash_ok else 'BAD':<4}  {_data(e.data)}"
            )
    out.append("")
    out.append("Checks:")
    for check in r.checks:  # the same list the API answers and the web page shows
        out.append(f"  {check.title}: {check.status} ({check.summary})")
        out += _finding(check.first_problem)
        if check.note:
            out.append(f"    note: {check.note}")
    t = r.timing
    out.append("Timing:")
    for s in t.seats:
        out.append(
            f"    seat {s.seat} {s.player}: {s.moves} moves, total {s.total_s:.2f} s, "
            f"mean {s.mean_s:.2f} s, longest {s.max_s:.2f} s"
        )
    if t.long_gaps:
        for g in t.long_gaps:
            out.append(
                f"    long gap: {g.seconds:.1f} s between versions "
                f"{g.after_version} and {g.version}"
            )
    else:
        out.append(f"    long gaps (> {t.gap_threshold_s:.0f} s): none")
    disconnections = t.disconnections
    out.append(
        "    disconnections: "
        + (disconnections if isinstance(disconnections, str) else f"{len(disconnections)}")
    )
    if r.disputes:
        out.append("Disputes:")
        for d in r.disputes:
            line = (
                f"    {d.dispute_id} by seat {d.seat} {d.player} at version "
                f"{d.filed_version}: {d.state} - {d.reason!r}"
            )
            if d.decided_by:
                line += f"; decided by {d.decided_by}: {d.decision_reason!r}"
            out.append(line)
    else:
        out.append("Disputes: none")
    if r.flags:  # admins only: the report a player reads has none (docs/fairplay.md)
        out.append("Fair-play flags naming this match:")
        for f in r.flags:
            numbers = " ".join(f"{k}={v:g}" for k, v in f.numbers.items())
            out.append(f"    {f.flag_id} {f.signal} {' vs '.join(f.players)}: {numbers}")
    out.append("")
    out.append(f"Verdict: {r.verdict.line}")
    return "\n".join(out)
