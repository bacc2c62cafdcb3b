"""FIDE's Tournament Report File, version 2026 (TRF-2026): write one, read one.

The format (FIDE Handbook, "TRF26", applied from 1 September 2025) is fixed
columns, one record a line, each introduced by a three-character code:

* ``012`` name, ``042`` / ``052`` start and end dates, ``062`` players,
  ``092`` type, ``102`` chief arbiter (the organiser), ``142`` rounds,
  ``152`` initial colour (``W``: seat 0 is White), ``162`` the points of a
  pairing-allocated bye when not a win's, ``202`` the tie-breaks (C.07 codes);
* ``001`` one player: starting rank (5-8), name (15-47), rating (49-52),
  points (81-84), rank (86-89), then ten columns a round from 92: the
  opponent's starting rank (``0000`` for none), the colour (``w`` / ``b`` /
  ``-``), the result (``1 = 0`` over the board, ``+ -`` forfeits, ``U`` a
  pairing-allocated bye, ``H`` / ``F`` / ``Z`` half, full and zero point byes);
* ``250`` accelerated rounds (virtual points), ``260`` prohibited pairings,
  ``240`` requested byes.

``XXR`` (rounds) and ``XXC white1`` are the JaVaFo extension lines every
endorsed pairing engine reads (bbpPairings, JaVaFo): written too, so the file
can be handed to them as it is. Seat 0 is White throughout.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from datetime import date

import msgspec


class TrfRound(msgspec.Struct, frozen=True, kw_only=True):
    opponent: int = 0
    """The opponent's starting rank (0: none)."""
    colour: str = "-"
    """``w``, ``b`` or ``-``."""
    result: str = "Z"
    """One of ``1 = 0 + - W D L H F U Z``."""


class TrfPlayer(msgspec.Struct, frozen=True, kw_only=True):
    number: int
    """Starting rank, 1-based."""
    name: str
    rating: int = 0
    fide_id: str = ""
    points: float = 0.0
    rank: int = 0
    rounds: tuple[TrfRound, ...] = ()


class TrfTournament(msgspec.Struct, frozen=True, kw_only=True):
    name: str
    rounds: int
    players: tuple[TrfPlayer, ...]
    start: date | None = None
    end: date | None = None
    arbiter: str = ""
    kind: str = "Swiss"
    bye_points: float = 1.0
    tiebreaks: tuple[str, ...] = ()
    accelerated: tuple[tuple[float, int, int, int, int], ...] = ()
    """(virtual points, first round, last round, first player, last player)."""
    forbidden: tuple[tuple[int, int], ...] = ()
    requested_byes: tuple[tuple[str, int, int], ...] = ()
    """(kind ``H`` / ``F`` / ``Z``, round, player)."""


class TrfError(ValueError):
    """A line of the file is not TRF: says which and why."""


def _points(value: float) -> str:
    return f"{value:4.1f}"


def _column(line: list[str], start: int, text: str) -> None:
    """Write ``text`` at 1-based column ``start``."""
    end = start - 1 + len(text)
    if len(line) < end:
        line.extend(" " * (end - len(line)))
    line[start - 1 : end] = list(text)


def write(t: TrfTournament) -> str:
    """The tournament as TRF-2026 text (lines end with CR LF, as FIDE asks for a CR)."""
    lines = [f"012 {t.name}"]
    if t.start:
        lines.append(f"042 {t.start:%Y/%m/%d}")
    if t.end:
        lines.append(f"052 {t.end:%Y/%m/%d}")
    lines.append(f"062 {len(t.players)}")
    lines.append(f"092 {t.kind}")
    if t.arbiter:
        lines.append(f"102 {t.arbiter}")
    lines.append(f"142 {t.rounds}")
    lines.append("152 W")
    if t.bye_points != 1.0:
        lines.append(f"162  P{t.bye_points:4.1f}")
    if t.tiebreaks:
        lines.append(f"202 {','.join(t.tiebreaks)}")
    lines.append(f"XXR {t.rounds}")
    lines.append("XXC white1")
    for p in t.players:
        line = list("001")
        _column(line, 5, f"{p.number:4d}")
        _column(line, 15, p.name[:33].ljust(33))
        _column(line, 49, f"{p.rating:4d}" if p.rating else "    ")
        if p.fide_id:
            _column(line, 58, p.fide_id[:11].rjust(11))
        _column(line, 81, _points(p.points))
        _column(line, 86, f"{p.rank:4d}")
        for k, r in enumerate(p.rounds):
            start = 92 + 10 * k
            _column(line, start, f"{r.opponent:04d}" if r.opponent else "0000")
            _column(line, start + 5, r.colour)
            _column(line, start + 7, r.result)
        lines.append("".join(line).rstrip())
    for points, first, last, lo, hi in t.accelerated:
        lines.append(f"250      {points:4.1f} {first:03d} {last:03d} {lo:04d} {hi:04d}")
    for a, b in t.forbidden:
        lines.append(f"260 001 {t.rounds:03d} {a:4d} {b:4d}")
    for kind, round_no, number in t.requested_byes:
        lines.append(f"240 {kind} {round_no:03d} {number:4d}")
    return "\r\n".join(lines) + "\r\n"


def _field(line: str, start: int, end: int) -> str:
    return line[start - 1 : end].strip()


def _number(text: str, what: str, row: int) -> int:
    try:
        return int(text)
    except ValueError:
        raise TrfError(f"line {row}: {what} is not a number ({text!r})") from None


def _decimal(text: str, what: str, row: int) -> float:
    try:
        return float(text) if text else 0.0
    except ValueError:
        raise TrfError(f"line {row}: {what} is not a number ({text!r})") from None


RESULTS = frozenset("1=0+-WDLHFUZ")


def read(text: str) -> TrfTournament:
    """Parse TRF text (TRF-2026, TRF16 and the JaVaFo ``XX?`` lines); raises ``TrfError``."""
    name = ""
    rounds = 0
    start = end = None
    arbiter = ""
    kind = "Swiss"
    bye_points = 1.0
    tiebreaks: tuple[str, ...] = ()
    players: list[TrfPlayer] = []
    accelerated: list[tuple[float, int, int, int, int]] = []
    forbidden: list[tuple[int, int]] = []
    byes: list[tuple[str, int, int]] = []
    for row, raw in enumerate(text.splitlines(), start=1):
        line = raw.rstrip("\r\n")
        if not line.strip() or line.startswith("###"):
            continue
        code, rest = line[:3], line[4:].strip()
        match code:
            case "012":
                name = rest
            case "042" | "052":
                try:
                    when = date(*(int(x) for x in rest.replace("-", "/").split("/")))
                except (TypeError, ValueError):
                    raise TrfError(f"line {row}: a date is YYYY/MM/DD, not {rest!r}") from None
                start, end = (when, end) if code == "042" else (start, when)
            case "092":
                kind = rest
            case "102":
                arbiter = rest
            case "142" | "XXR":
                rounds = _number(rest, "the number of rounds", row)
            case "162":
                if "P" in rest:
                    bye_points = _decimal(
                        rest.split("P", 1)[1][:4].strip(), "the bye's points", row
                    )
            case "202":
                tiebreaks = tuple(x.strip() for x in rest.split(",") if x.strip())
            case "001":
                players.append(_player(line, row))
            case "250":
                parts = rest.split()
                if len(parts) < 5:
                    raise TrfError(f"line {row}: a 250 record has points, rounds and players")
                accelerated.append(
                    (
                        _decimal(parts[-5], "the virtual points", row),
                        *(_number(x, "a round or player", row) for x in parts[-4:]),
                    )  # type: ignore[arg-type]
                )
            case "260":
                ids = [_number(x, "a player", row) for x in rest.split()[2:]]
                for i, a in enumerate(ids):
                    for b in ids[i + 1 :]:
                        forbidden.append((a, b))
            case "240":
                parts = rest.split()
                if len(parts) < 3 or parts[0] not in ("H", "F", "Z"):
                    raise TrfError(f"line {row}: a 240 record is a bye kind, a round, players")
                round_no = _number(parts[1], "the round", row)
                for x in parts[2:]:
                    byes.append((parts[0], round_no, _number(x, "a player", row)))
            case _:
                continue  # other records (teams, national ratings, XXC ...) are not ours
    if not players:
        raise TrfError("the file has no player (001) record")
    numbers = [p.number for p in players]
    if len(set(numbers)) != len(numbers):
        raise TrfError("two players have the same starting rank")
    return TrfTournament(
        name=name or "Imported tournament",
        rounds=rounds or max((len(p.rounds) for p in players), default=0),
        players=tuple(sorted(players, key=lambda p: p.number)),
        start=start,
        end=end,
        arbiter=arbiter,
        kind=kind,
        bye_points=bye_points,
        tiebreaks=tiebreaks,
        accelerated=tuple(accelerated),
        forbidden=tuple(forbidden),
        requested_byes=tuple(byes),
    )


def _player(line: str, row: int) -> TrfPlayer:
    number = _number(_field(line, 5, 8), "the starting rank", row)
    if not 1 <= number <= 9999:
        raise TrfError(f"line {row}: a starting rank is 1 to 9999")
    rating_text = _field(line, 49, 52)
    rounds: list[TrfRound] = []
    k = 0
    while len(line) >= 92 + 10 * k:
        start = 92 + 10 * k
        block = line[start - 1 : start + 9]
        if not block.strip():
            rounds.append(TrfRound())
            k += 1
            continue
        opponent_text = block[0:4].strip()
        colour = (block[5:6].strip() or "-").lower()
        result = (block[7:8].strip() or "Z").upper()
        if colour not in ("w", "b", "-"):
            raise TrfError(f"line {row}: round {k + 1}'s colour is w, b or -, not {colour!r}")
        if result not in RESULTS:
            raise TrfError(f"line {row}: round {k + 1}'s result {result!r} is not a TRF code")
        opponent = _number(opponent_text, f"round {k + 1}'s opponent", row) if opponent_text else 0
        rounds.append(TrfRound(opponent=opponent, colour=colour, result=result))
        k += 1
    while rounds and rounds[-1] == TrfRound():
        rounds.pop()
    return TrfPlayer(
        number=number,
        name=_field(line, 15, 47),
        rating=_number(rating_text, "the rating", row) if rating_text else 0,
        fide_id=_field(line, 58, 68),
        points=_decimal(_field(line, 81, 84), "the points", row),
        rank=_number(_field(line, 86, 89), "the rank", row) if _field(line, 86, 89) else 0,
        rounds=tuple(rounds),
    )


def numbering(ids: Iterable[str]) -> dict[str, int]:
    """Starting ranks for player ids given in starting order."""
    return {p: k for k, p in enumerate(ids, start=1)}


def played_result(points: float, forfeit: bool) -> str:
    if forfeit:
        return "+" if points >= 1 else "-"
    return "1" if points >= 1 else "=" if points > 0 else "0"


__all__: Sequence[str] = (
    "TrfError",
    "TrfPlayer",
    "TrfRound",
    "TrfTournament",
    "numbering",
    "played_result",
    "read",
    "write",
)
