"""Tournaments: a second aggregate beside matches, with its own stream.

Commands are what an organiser, a player or the service asks of one
tournament (imperative names); events are what its stream holds (past tense).
Both are frozen, keyword-only Structs tagged by ``type``; every event carries
``v`` (its schema version) and ``at`` (when it happened, UTC, given by the
caller: the engine has no clock). No rule lives here: see
``service.tournaments`` and docs/tournaments.md.

Results are written seat 0 first, as chess writes white first: ``"1-0"``
seat 0 won, ``"0-1"`` seat 1 won, ``"1/2-1/2"`` a draw, ``"+-"`` seat 0
won by forfeit, ``"-+"`` seat 1 won by forfeit, ``"--"`` both forfeited.
"""

from datetime import datetime
from typing import Annotated, Literal, TypeAlias

import msgspec

from schemas.cards import Seat

TiebreakName: TypeAlias = Literal[
    "buchholz", "buchholz_cut1", "buchholz_cut2", "buchholz_median1", "buchholz_median2",
    "sonneborn_berger", "progressive", "direct_encounter", "wins", "games_won",
    "games_second_seat", "average_rating_of_opponents", "koya",
]  # fmt: skip
"""The tie-breaks an organiser may order (FIDE C.07 definitions, docs/tournaments.md)."""

GameResult: TypeAlias = Literal["1-0", "0-1", "1/2-1/2", "+-", "-+", "--"]

ByeKind: TypeAlias = Literal["bye", "unpaired", "rest", "half"]
"""``bye``: a Swiss round's pairing-allocated bye, worth the organiser's bye
points; ``unpaired``: nobody could legally be paired with the player (0);
``rest``: a round-robin round against the dummy of an odd field (0);
``half``: a half-point bye the player asked for in advance (0.5)."""

WithdrawnBy: TypeAlias = Literal["player", "organiser", "no_show"]


# -- formats --------------------------------------------------------------------------


class _Format(msgspec.Struct, frozen=True, kw_only=True, tag_field="type"):
    pass


class Swiss(_Format, frozen=True, tag="swiss"):
    """Paired by the FIDE Dutch system (C.04.3)."""

    rounds: int
    bye_points: float = 1.0
    """What a pairing-allocated bye is worth: 1, 0.5 or 0."""
    accelerated: bool = False
    """Baku acceleration (C.04.5.1): the top half starts with virtual points."""
    late_entry_until: Annotated[int, msgspec.Meta(ge=1, le=50)] | None = None
    """The last round a late entry may still be paired in (None: until the
    last round; never during the final round)."""
    half_point_byes: Annotated[int, msgspec.Meta(ge=0, le=50)] = 0
    """How many half-point byes a player may ask for in advance (0: none)."""


class RoundRobin(_Format, frozen=True, tag="round_robin"):
    cycles: int = 1
    """1: everyone meets everyone once; 2: twice, seats swapped in the second cycle."""


class Arena(_Format, frozen=True, tag="arena"):
    minutes: int
    """How long pairing goes on after the start."""
    avoid_repeats: bool = False
    """Never pair two players who have met (small arenas; lichess #6394)."""


Format: TypeAlias = Swiss | RoundRobin | Arena


# -- parts of events -------------------------------------------------------------------


class Game(msgspec.Struct, frozen=True, kw_only=True):
    """One pairing: a match between two entrants (or a forfeit decided at pairing)."""

    game: int
    """1-based, unique in the tournament, in pairing order."""
    round: int
    """The round (0 in an arena, which has none)."""
    board: int
    players: tuple[str, str]
    """Player ids by seat."""
    match_id: str | None
    """The match played for it; None when it is decided without one (a
    round-robin game against a player who has withdrawn)."""


class Bye(msgspec.Struct, frozen=True, kw_only=True):
    player_id: str
    points: float
    kind: ByeKind


# -- commands --------------------------------------------------------------------------


class _Command(msgspec.Struct, frozen=True, kw_only=True, tag_field="type"):
    at: datetime


class CreateTournament(_Command, frozen=True, tag="create_tournament"):
    tournament_id: str
    name: str
    organiser: str
    ladder_id: str
    ruleset: str
    """The ladder's ruleset: every match of the tournament is played with it."""
    format: Format
    tiebreaks: tuple[str, ...] | None = None
    """In the organiser's order; None: the format's usual list."""
    auto_pair: bool = True
    """Pair each round as soon as the previous one closes (else the organiser pairs it)."""
    starts_at: datetime | None = None
    max_players: int | None = None


class JoinTournament(_Command, frozen=True, tag="join_tournament"):
    player_id: str
    rating: float
    """The player's rating on the ladder now (the seeding order)."""


class WithdrawPlayer(_Command, frozen=True, tag="withdraw_player"):
    player_id: str
    by: Literal["player", "organiser"]


class RequestBye(_Command, frozen=True, tag="request_bye"):
    """A player asks in advance for a half-point bye in a round not yet paired (Swiss)."""

    player_id: str
    round: int


class ForbidPairing(_Command, frozen=True, tag="forbid_pairing"):
    players: tuple[str, str]


class StartTournament(_Command, frozen=True, tag="start_tournament"):
    pass


class PairRound(_Command, frozen=True, tag="pair_round"):
    """Pair the next round; ``pairs`` and ``byes`` are the organiser's forced
    pairings (seat 0 first), the engine pairs everyone else."""

    round: int
    pairs: tuple[tuple[str, str], ...] = ()
    byes: tuple[str, ...] = ()


class RecordResult(_Command, frozen=True, tag="record_result"):
    """A tournament match ended (sent by the results runner, from ``MatchEnded``)."""

    match_id: str
    winner: Seat | None
    reason: str
    """The match's end reason (``qualified``, ``timeout``, ``aborted``, ...)."""
    forfeit: Seat | None = None
    """For an aborted match: the seat that did not show (None: unknown, both)."""


class AnnulResult(_Command, frozen=True, tag="annul_result"):
    """A tournament match was annulled (from ``MatchAnnulled``): it has no result."""

    match_id: str


class EndTournament(_Command, frozen=True, tag="end_tournament"):
    """An arena's time is up (sent by the runner's clock)."""


TournamentCommand: TypeAlias = (
    CreateTournament
    | JoinTournament
    | WithdrawPlayer
    | RequestBye
    | ForbidPairing
    | StartTournament
    | PairRound
    | RecordResult
    | AnnulResult
    | EndTournament
)


# -- events ----------------------------------------------------------------------------


class _Event(msgspec.Struct, frozen=True, kw_only=True, tag_field="type"):
    v: int = 1
    at: datetime


class TournamentCreated(_Event, frozen=True, tag="tournament_created"):
    tournament_id: str
    name: str
    organiser: str
    ladder_id: str
    ruleset: str
    format: Format
    tiebreaks: tuple[TiebreakName, ...]
    auto_pair: bool
    starts_at: datetime | None = None
    max_players: int | None = None


class PlayerJoined(_Event, frozen=True, tag="player_joined"):
    player_id: str
    rating: float


class PlayerReturned(_Event, frozen=True, tag="player_returned"):
    """A withdrawn player came back (Swiss and arena): paired again from the next round."""

    player_id: str


class PlayerWithdrew(_Event, frozen=True, tag="player_withdrew"):
    """Honoured from the next round: a game already paired is still the player's."""

    player_id: str
    by: WithdrawnBy


class ByeRequested(_Event, frozen=True, tag="bye_requested"):
    """Granted: the player sits out ``round`` with half a point (C.07: a half-point bye)."""

    player_id: str
    round: int


class PairingForbidden(_Event, frozen=True, tag="pairing_forbidden"):
    players: tuple[str, str]
    """In id order."""


class TournamentStarted(_Event, frozen=True, tag="tournament_started"):
    seeds: tuple[str, ...]
    """The entrants in seeding order (rating, then joining order): the
    round-robin's pairing numbers and the Swiss's initial ranking."""
    ends_at: datetime | None = None
    """An arena's end."""


class RoundPaired(_Event, frozen=True, tag="round_paired"):
    round: int
    games: tuple[Game, ...]
    byes: tuple[Bye, ...] = ()
    forced: bool = False
    """Some pairings were the organiser's."""


class ArenaPaired(_Event, frozen=True, tag="arena_paired"):
    games: tuple[Game, ...]


class ResultRecorded(_Event, frozen=True, tag="result_recorded"):
    game: int
    match_id: str | None
    result: GameResult
    reason: str
    counted: bool = True
    """False for an arena game that ended after the arena did (lichess's rule)."""


class ResultAnnulled(_Event, frozen=True, tag="result_annulled"):
    game: int
    match_id: str


class RoundClosed(_Event, frozen=True, tag="round_closed"):
    round: int


class TournamentEnded(_Event, frozen=True, tag="tournament_ended"):
    pass


TournamentEvent: TypeAlias = (
    TournamentCreated
    | PlayerJoined
    | PlayerReturned
    | PlayerWithdrew
    | ByeRequested
    | PairingForbidden
    | TournamentStarted
    | RoundPaired
    | ArenaPaired
    | ResultRecorded
    | ResultAnnulled
    | RoundClosed
    | TournamentEnded
)

_encoder = msgspec.json.Encoder()
_decoder: msgspec.json.Decoder[TournamentEvent] = msgspec.json.Decoder(TournamentEvent)


def encode_tournament_event(event: TournamentEvent) -> bytes:
    """Canonical bytes of a tournament event: what its chain hashes."""
    return _encoder.encode(event)


def decode_tournament_event(data: bytes | str) -> TournamentEvent:
    return _decoder.decode(data)


def tournament_event_type(event: TournamentEvent) -> str:
    tag = type(event).__struct_config__.tag
    assert isinstance(tag, str)
    return tag
