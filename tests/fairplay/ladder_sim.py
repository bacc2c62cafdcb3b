"""Whole ladders played by simulated bots, as the fair-play signals see them
(``service.fairplay.games.Game``): honest bots of hidden strengths, and the
cases a ladder must catch, planted among them.

Honest bots play random opponents; a result follows the strengths' Elo odds;
a loser resigns early now and then, as people do; each move takes a person's
time (1 to 20 s). Planted: win-trading pairs (one resigns to the other before
the third card, again and again), sandbaggers (a strong player who loses a
long run on purpose), a pair of fresh accounts that play only each other, a
player who moves faster than a person, and a booster closed mid-season.
"""

from __future__ import annotations

import random
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta

from schemas.fairplay import DEFAULT_FAIRPLAY
from service.fairplay.games import Game
from service.fairplay.signals import Account

START = datetime(2026, 11, 1, tzinfo=UTC)
DAYS = 28


@dataclass
class Ladder:
    games: list[Game] = field(default_factory=list)
    accounts: dict[str, Account] = field(default_factory=dict)
    planted: dict[str, set[str]] = field(default_factory=dict)
    """signal -> the players a flag of that signal must name."""
    honest: list[str] = field(default_factory=list)
    strength: dict[str, float] = field(default_factory=dict)

    def add(self, rng: random.Random, a: str, b: str, winner: str, *, early: bool = False,
            think: tuple[float, float] = (1.0, 20.0), fast: str | None = None) -> Game:  # fmt: skip
        n = len(self.games) + 1
        at = START + timedelta(seconds=DAYS * 86_400 * n / self.expected)
        moves = rng.randint(0, 2) if early else rng.randint(12, 40)
        g = Game(
            match_id=f"m{n:07d}",
            players=(a, b),
            started_at=at,
            ended_at=at
            + (timedelta(seconds=rng.uniform(5, 25)) if early else timedelta(minutes=5)),
            position=n,
            winner=0 if winner == a else 1,
            reason="resigned" if early or rng.random() < 0.2 else "qualified",
            cards_played=moves,
        )
        timed = []
        for player in (a, b):
            lo, hi = (0.02, 0.2) if player == fast else think
            times = [rng.uniform(lo, hi) for _ in range(moves // 2)]
            timed.append((len(times), sum(1 for t in times if t < DEFAULT_FAIRPLAY.fast_move_s)))
        g.moves = (timed[0][0], timed[1][0])
        g.fast = (timed[0][1], timed[1][1])
        self.games.append(g)
        return g

    expected: int = 1


def honest_result(rng: random.Random, ladder: Ladder, a: str, b: str) -> str:
    d = ladder.strength[a] - ladder.strength[b]
    return a if rng.random() < 1 / (1 + 10 ** (-d / 400)) else b


def build(seed: int, honest: int = 1_000, games_each: int = 40, *, plant: bool = True) -> Ladder:
    rng = random.Random(seed)
    ladder = Ladder()
    ladder.honest = [f"h{i:04d}" for i in range(honest)]
    for i, p in enumerate(ladder.honest):
        ladder.strength[p] = rng.gauss(1500, 200)
        ladder.accounts[p] = Account(created_at=START - timedelta(days=400 - i * 0.37))
    planted = {
        "early_ends": {"trader_a", "trader_b", "booster", "booster_feed"},
        "losing_streak": {"sandbagger"},
        "new_accounts": {"fresh_1", "fresh_2"},
        "fast_moves": {"speedy"},
    } if plant else {}  # fmt: skip
    ladder.planted = planted
    extra = ["trader_a", "trader_b", "sandbagger", "fresh_1", "fresh_2", "speedy", "booster"]
    extra += ["booster_feed"]
    for i, p in enumerate(extra if plant else []):
        ladder.strength[p] = 1500.0
        ladder.accounts[p] = Account(created_at=START - timedelta(days=200 + 3 * i))
    if plant:
        ladder.strength["sandbagger"] = 2100.0
        ladder.accounts["fresh_1"] = Account(created_at=START + timedelta(days=1, hours=2))
        ladder.accounts["fresh_2"] = Account(created_at=START + timedelta(days=1, hours=3))
    total = honest * games_each // 2
    ladder.expected = total + (200 if plant else 0)
    script: list[tuple[str, ...]] = [("honest",)] * total
    if plant:
        script += [("trade",)] * 30 + [("fresh",)] * 14 + [("feed",)] * 14 + [("speedy",)] * 30
        script += [("sandbag_up",)] * 30 + [("victim",)] * 10
    rng.shuffle(script)
    if plant:  # the sandbagger climbs first, then throws a long run near the end
        script += [("sandbag_down",)] * 16
    players = ladder.honest
    for (what,) in script:
        if what == "honest":
            a, b = rng.sample(players, 2)
            loser_early = rng.random() < 0.03
            ladder.add(rng, a, b, honest_result(rng, ladder, a, b), early=loser_early)
        elif what == "trade":
            ladder.add(rng, "trader_a", "trader_b", "trader_a", early=True)
        elif what == "fresh":
            w = rng.choice(("fresh_1", "fresh_2"))
            ladder.add(rng, "fresh_1", "fresh_2", w)
        elif what == "feed":
            ladder.add(rng, "booster", "booster_feed", "booster", early=True)
        elif what == "speedy":
            b = rng.choice(players)
            ladder.add(rng, "speedy", b, honest_result(rng, ladder, "speedy", b), fast="speedy")
        elif what == "victim":  # the booster, fed to a high rating, takes points off people
            b = rng.choice(players)
            ladder.add(rng, "booster", b, "booster")
        elif what == "sandbag_up":
            b = rng.choice(players)
            ladder.add(rng, "sandbagger", b, "sandbagger")
        elif what == "sandbag_down":
            b = rng.choice(players)
            ladder.add(rng, "sandbagger", b, b)
    return ladder
