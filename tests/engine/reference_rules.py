"""A second, plain implementation of RULES.md §2-§9, for cross-checking the engine.

Written from RULES.md alone with plain dicts and lists, sharing no code with
``service.engine`` except the deal (checked on its own against docs/dealing.md
in test_dealing.py). It takes seat commands and produces events as JSON-like
dicts, in the engine's event format.
"""

from typing import Any

from service.engine.dealing import deal

SUIT_VALUE = {"M": 4, "C": 3, "W": 2, "S": 1}
SUIT_NAME = {"M": "matcha", "C": "chawan", "W": "water", "S": "chashaku"}


def cyclic_beats(a: int, b: int) -> bool:
    if a == 1 and b == 4:
        return True
    if a == 4 and b == 1:
        return False
    return a > b


def card_matches(card: str, tea: str, target: str) -> bool:
    if card.startswith("Z"):
        return False
    return card[1] == tea[1] if target == "number" else card[0] == tea[0]


class Reference:
    def __init__(self, ruleset: dict[str, Any], first_dealer: int, seed: str) -> None:
        self.rules = ruleset
        self.seed = seed
        self.events: list[dict[str, Any]] = []
        self.tokens = [dict.fromkeys(SUIT_NAME.values(), 0) | {"chasen": 0} for _ in range(2)]
        self.hand_no = 0
        self.dealer = 1 - first_dealer  # the first deal flips it to first_dealer
        self.hands: list[list[str]] = [[], []]
        self.kept: list[list[str] | None] = [None, None]
        self.over = False
        self.keeping = False
        self._deal()

    # -- events ----------------------------------------------------------------

    def emit(self, type_: str, **fields: Any) -> None:
        self.events.append({"type": type_, **fields, "v": 1})

    def _deal(self) -> None:
        self.hand_no += 1
        self.dealer = 1 - self.dealer
        kept = (tuple(self.kept[0] or ()), tuple(self.kept[1] or ()))
        dealt = deal(self.seed, self.hand_no, self.dealer, kept)  # type: ignore[arg-type]
        self.emit(
            "hand_dealt",
            hand=self.hand_no,
            dealer=self.dealer,
            tea=[{"number": p.number, "suit": p.suit} for p in dealt.tea],
            hands=[list(h) for h in dealt.hands],
            set_aside=list(dealt.set_aside),
        )
        self.tea = [(p.number, p.suit) for p in dealt.tea]
        self.hands = [list(h) for h in dealt.hands]
        self.keeping = False
        self.kept = [None, None]
        self._start_round(1)

    def _start_round(self, round_no: int) -> None:
        self.round = round_no
        self.passed = [False, False]
        self.table: dict[tuple[int, str], str] = {}  # (seat, target) -> card
        self.turn = self.dealer
        self._auto()

    # -- commands ------------------------------------------------------------------

    def play(self, seat: int, card: str, target: str) -> None:
        assert not self.over and not self.keeping and self.turn == seat
        assert card in self.hands[seat] and (seat, target) not in self.table
        self.hands[seat].remove(card)
        self.table[(seat, target)] = card
        self.emit(
            "card_played", seat=seat, hand=self.hand_no, round=self.round, card=card, target=target
        )
        self.turn = seat if self.passed[1 - seat] else 1 - seat
        self._auto()

    def pass_(self, seat: int, automatic: bool = False) -> None:
        assert not self.over and not self.keeping and self.turn == seat
        self.passed[seat] = True
        self.emit("passed", seat=seat, hand=self.hand_no, round=self.round, automatic=automatic)
        if self.passed[1 - seat]:
            self._reveal()
        else:
            self.turn = 1 - seat
            self._auto()

    def keep(self, seat: int, cards: list[str]) -> None:
        assert self.keeping and self.kept[seat] is None and self.hands[seat]
        chosen = [c for c in self.hands[seat] if c in cards]
        self.kept[seat] = chosen
        self.emit("cards_kept", seat=seat, hand=self.hand_no, cards=chosen)
        self._maybe_deal()

    # -- consequences ------------------------------------------------------------

    def _auto(self) -> None:
        if self.over or self.keeping:
            return
        seat = self.turn
        can = self.hands[seat] and any((seat, t) not in self.table for t in ("number", "suit"))
        if not can:
            self.pass_(seat, automatic=True)

    def _reveal(self) -> None:
        outcomes = []
        given_so_far = {k: 0 for k in self.tokens[0]}
        for target, tea in zip(("number", "suit"), self.tea[self.round - 1], strict=True):
            kind = SUIT_NAME[tea[0]]
            c0, c1 = self.table.get((0, target)), self.table.get((1, target))
            outcome: dict[str, Any] = {
                "target": target, "tea_card": tea, "cards": [c0, c1],
                "shown": False, "matched": [None, None], "winner": None, "due": [],
            }  # fmt: skip
            if (c0 is None) != (c1 is None):
                lone = 0 if c0 is not None else 1
                outcome["winner"] = lone
                outcome["due"] = [{"seat": lone, "kind": kind}]
            elif c0 is not None and c1 is not None:
                m0, m1 = card_matches(c0, tea, target), card_matches(c1, tea, target)
                outcome["shown"] = True
                outcome["matched"] = [m0, m1]
                if m0 and m1:
                    if target == "number":
                        first = cyclic_beats(SUIT_VALUE[c0[0]], SUIT_VALUE[c1[0]])
                    else:
                        first = cyclic_beats(int(c0[1]), int(c1[1]))
                    outcome["winner"] = 0 if first else 1
                    outcome["due"] = [{"seat": outcome["winner"], "kind": kind}]
                elif m0 or m1:
                    w = 0 if m0 else 1
                    outcome["winner"] = w
                    outcome["due"] = [{"seat": w, "kind": kind}, {"seat": 1 - w, "kind": "chasen"}]
            given = []
            for award in outcome["due"]:
                k = award["kind"]
                out = self.tokens[0][k] + self.tokens[1][k] + given_so_far[k]
                if out < self.rules["token_supply"]:
                    given_so_far[k] += 1
                    given.append(award)
            outcome["given"] = given
            outcomes.append(outcome)
        for outcome in outcomes:
            for award in outcome["given"]:
                self.tokens[award["seat"]][award["kind"]] += 1
        self.emit("round_revealed", hand=self.hand_no, round=self.round, outcomes=outcomes)
        self._after_reveal()

    def _qualifies(self, seat: int) -> bool:
        t = self.tokens[seat]
        suits = [t[k] for k in ("matcha", "chawan", "water", "chashaku")]
        return (
            max(suits) >= self.rules["suit_tokens_to_win"]
            or t["chasen"] >= self.rules["chasen_tokens_to_win"]
            or (self.rules["one_of_each_wins"] and min(t.values()) >= 1)
        )

    def _comparison(self) -> int | None:
        for kind in ("matcha", "chawan", "water", "chashaku"):
            a, b = self.tokens[0][kind], self.tokens[1][kind]
            if a != b:
                return 0 if a > b else 1
        return None

    def _end(self, winner: int | None, reason: str) -> None:
        self.over = True
        self.emit("match_ended", winner=winner, reason=reason, seed=self.seed)

    def _after_reveal(self) -> None:
        q0, q1 = self._qualifies(0), self._qualifies(1)
        if q0 and q1 and self._comparison() is not None:
            return self._end(self._comparison(), "comparison")
        if q0 != q1:
            return self._end(0 if q0 else 1, "qualified")
        if self.round < 3:
            return self._start_round(self.round + 1)
        if self.hand_no >= self.rules["max_hands"]:
            return self._end(self._comparison(), "hand_limit")
        self.emit("hand_ended", hand=self.hand_no)
        self.keeping = True
        self._maybe_deal()
        return None

    def _maybe_deal(self) -> None:
        waiting = [s for s in (0, 1) if self.hands[s] and self.kept[s] is None]
        if not waiting:
            self._deal()
