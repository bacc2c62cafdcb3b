"""One ladder's fair-play projection, as store operations: compute its flags and
refunds from the log (``compute``), and replace its rows (``write``). The
worker's runner and the rebuild use the same two, so a rebuild equals a fresh
recompute by construction (tests/fairplay/test_projection.py checks it)."""

from __future__ import annotations

import msgspec

from schemas.fairplay import DEFAULT_FAIRPLAY, AccountClosed, FairPlaySettings, Flag
from service.fairplay.games import columns_of_log, games_of
from service.fairplay.refunds import Refund, refunds_of
from service.fairplay.signals import Account, flags_of_columns
from service.fairplay.stream import every_decision
from service.ratings.elo import EloSettings
from service.ratings.settings import RatingSettings, settings_from_json
from service.store import matchlog
from service.store.ops import Op, Query


class LadderFairPlay(msgspec.Struct, frozen=True, kw_only=True):
    ladder_id: str
    flags: tuple[Flag, ...]
    refunds: tuple[Refund, ...]


def settings_of(ladder_id: str) -> Op[FairPlaySettings]:
    """The ladder's thresholds (the defaults when its organiser set none)."""
    rows = yield Query(
        "SELECT settings::text FROM fairplay_settings WHERE ladder_id = %s", (ladder_id,)
    )
    if not rows:
        return DEFAULT_FAIRPLAY
    return msgspec.json.decode(rows[0][0], type=FairPlaySettings)


def _rating_of(ladder_id: str) -> Op[RatingSettings]:
    """The ladder's rating settings (Elo or Glicko-2)."""
    rows = yield Query("SELECT rating::text FROM ladders WHERE id = %s", (ladder_id,))
    return settings_from_json(rows[0][0]) if rows else EloSettings()


def compute(ladder_id: str) -> Op[LadderFairPlay]:
    """The ladder's flags and refunds, from the log and the decisions alone."""
    settings = yield from settings_of(ladder_id)
    log = yield from matchlog.fairplay_log(ladder_id, settings.fast_move_s)
    rating = yield from _rating_of(ladder_id)
    # a Glicko-2 ladder's signals use the default Elo as their yardstick
    elo = rating if isinstance(rating, EloSettings) else EloSettings()
    decided = yield from every_decision()
    ours = set(log.match_ids)  # the ladder's ended matches: what a closure voids
    touching = [
        r.event
        for r in decided
        if isinstance(r.event, AccountClosed) and ours.intersection(r.event.voided)
    ]
    # games one by one only for the refunds (a closure that voided some of ours)
    closed = {r.event.player_id for r in decided if isinstance(r.event, AccountClosed)}
    refunds = (
        refunds_of(ladder_id, games_of(log), touching, rating, closed=closed) if touching else []
    )
    columns = columns_of_log(log)
    accounts = {
        player: Account(created_at=at, service_bot=bot)
        for player, at, bot in (yield from matchlog.accounts_of(columns.names))
    }
    flags = flags_of_columns(ladder_id, columns, settings, elo, accounts)
    return LadderFairPlay(ladder_id=ladder_id, flags=tuple(flags), refunds=tuple(refunds))


def write(found: LadderFairPlay) -> Op[None]:
    """Replace the ladder's rows with ``found`` (inside the caller's transaction)."""
    ladder = found.ladder_id
    yield Query("DELETE FROM fairplay_flags WHERE ladder_id = %s", (ladder,))
    yield Query("DELETE FROM fairplay_refunds WHERE ladder_id = %s", (ladder,))
    for f in found.flags:
        yield Query(
            "INSERT INTO fairplay_flags"
            " (flag_id, ladder_id, signal, players, numbers, matches, weight)"
            " VALUES (%s, %s, %s, %s, %s, %s, %s)",
            (
                f.flag_id,
                ladder,
                f.signal,
                list(f.players),
                msgspec.json.encode(f.numbers).decode(),
                list(f.matches),
                f.weight,
            ),
        )
    for r in found.refunds:
        yield Query(
            "INSERT INTO fairplay_refunds"
            " (ladder_id, player_id, closed_player, amount, before, after, at_position)"
            " VALUES (%s, %s, %s, %s, %s, %s, %s)",
            (ladder, r.player_id, r.closed_player, r.amount, r.before, r.after, r.at_position),
        )
    yield Query("UPDATE fairplay_settings SET dirty = false WHERE ladder_id = %s", (ladder,))


def _flag(row: tuple[object, ...]) -> Flag:
    flag_id, ladder, signal, players, numbers, matches, weight = row
    return msgspec.convert(
        {
            "flag_id": flag_id,
            "ladder_id": ladder,
            "signal": signal,
            "players": players,
            "numbers": numbers,
            "matches": matches,
            "weight": weight,
        },
        Flag,
    )


_FLAG_COLUMNS = "flag_id, ladder_id, signal, players, numbers, matches, weight"


def stored(ladder_id: str) -> Op[LadderFairPlay]:
    """The ladder's rows as the projection wrote them (in ``compute``'s order)."""
    rows = yield Query(
        f"SELECT {_FLAG_COLUMNS} FROM fairplay_flags WHERE ladder_id = %s"
        " ORDER BY weight DESC, flag_id",
        (ladder_id,),
    )
    refunds = yield Query(
        "SELECT player_id, closed_player, amount, before, after, at_position"
        " FROM fairplay_refunds WHERE ladder_id = %s ORDER BY at_position, player_id",
        (ladder_id,),
    )
    return LadderFairPlay(
        ladder_id=ladder_id,
        flags=tuple(_flag(r) for r in rows),
        refunds=tuple(
            Refund(
                ladder_id=ladder_id,
                player_id=p,
                closed_player=c,
                amount=a,
                before=b,
                after=af,
                at_position=int(pos),
            )
            for p, c, a, b, af, pos in refunds
        ),
    )


def every_flag() -> Op[list[Flag]]:
    """Every flag of every ladder, heaviest first."""
    rows = yield Query(f"SELECT {_FLAG_COLUMNS} FROM fairplay_flags ORDER BY weight DESC, flag_id")
    return [_flag(r) for r in rows]


def one_flag(flag_id: str) -> Op[Flag | None]:
    rows = yield Query(f"SELECT {_FLAG_COLUMNS} FROM fairplay_flags WHERE flag_id = %s", (flag_id,))
    return _flag(rows[0]) if rows else None


def flags_naming(match_id: str) -> Op[list[Flag]]:
    """The flags with this match among theirs (the audit report shows them)."""
    rows = yield Query(
        f"SELECT {_FLAG_COLUMNS} FROM fairplay_flags WHERE matches @> ARRAY[%s]::text[]"
        " ORDER BY weight DESC, flag_id",
        (match_id,),
    )
    return [_flag(r) for r in rows]


def dirty_ladders() -> Op[list[str]]:
    rows = yield Query("SELECT ladder_id FROM fairplay_settings WHERE dirty ORDER BY ladder_id")
    return [str(r[0]) for r in rows]


def refunds_of_player(player_id: str) -> Op[list[Refund]]:
    rows = yield Query(
        "SELECT ladder_id, closed_player, amount, before, after, at_position"
        " FROM fairplay_refunds WHERE player_id = %s ORDER BY at_position, ladder_id",
        (player_id,),
    )
    return [
        Refund(
            ladder_id=lad,
            player_id=player_id,
            closed_player=c,
            amount=a,
            before=b,
            after=af,
            at_position=int(pos),
        )
        for lad, c, a, b, af, pos in rows
    ]
