"""Two players play a whole match by clicking; a spectator watches it live;
the replay shows the same end. In a real headless Chromium."""

from __future__ import annotations

import json
import random
import re
from pathlib import Path
from typing import Any

import pytest
from web_pages import (
    CARD_CODE,
    VIEWPORTS,
    serious_a11y_violations,
    sign_in_as,
    state,
    take_turn,
    version,
    wait_version,
)
from web_server import Api
from web_truth import full_events, hidden_at, public_cards

from schemas.events import MatchEnded, RoundRevealed
from workers.ratings import update_ladder

events_so_far = full_events
EN_DASH = "\u2013"  # the end screen writes scores as "matcha 0\u20131"

pytestmark = pytest.mark.browser

MAX_ACTIONS = 400


def _frames_of(page: Any) -> list[str]:
    frames: list[str] = []

    def on_socket(ws: Any) -> None:
        ws.on(
            "framereceived",
            lambda payload: frames.append(
                payload if isinstance(payload, str) else payload.decode()
            ),
        )

    page.on("websocket", on_socket)
    return frames


def test_two_players_play_a_whole_match_by_clicking_while_a_spectator_watches(
    browser: Any,
    api: Api,
    app_url: str,
    database_url: str,
    admin_database_url: str,
    screenshots: Path,
) -> None:
    ladder, match_id, (alice, bob) = api.alice_and_bob("Web duel", "duel")

    contexts = [browser.new_context(viewport=VIEWPORTS["desktop"]) for _ in range(3)]
    sign_in_as(contexts[0], alice["token"], alice["id"], "alice")
    sign_in_as(contexts[1], bob["token"], bob["id"], "bob")
    requested: list[str] = []
    for ctx in contexts:
        ctx.on("request", lambda request: requested.append(request.url))
    players = [ctx.new_page() for ctx in contexts[:2]]
    watcher = contexts[2].new_page()
    errors: list[str] = []
    for page in (*players, watcher):
        page.on("pageerror", lambda exc: errors.append(str(exc)))
    frames = _frames_of(watcher)

    for page in players:
        page.goto(f"{app_url}/play/{match_id}")
    watcher.goto(f"{app_url}/watch/{match_id}")
    players[0].wait_for_selector(".table")
    start = version(players[0])
    for page in (*players, watcher):
        wait_version(page, start)
    watcher.wait_for_selector("#live-state:text('live')")
    # The spectator count (presence frames): the watcher is the one spectator.
    watcher.wait_for_selector("#spectators[data-count='1']:text('1 watching')", timeout=10_000)

    rng = random.Random(7)
    snapshots: list[tuple[int, str]] = []
    reveals_seen: set[str] = set()
    for _ in range(MAX_ACTIONS):
        acted = False
        for page in players:
            if take_turn(page, rng):
                acted = True
                now = version(page)
                # Everyone else follows live (no reload): the other seat and the spectator.
                for other in (*players, watcher):
                    wait_version(other, now)
                snapshots.append((version(watcher), watcher.inner_html("main")))
                reveal = page.query_selector(".reveal")
                if reveal is not None:
                    key = reveal.get_attribute("data-key")
                    if key not in reveals_seen:
                        reveals_seen.add(key)
                        watcher.wait_for_selector(f'#reveals li[data-key="{key}"]', timeout=5000)
                        if len(reveals_seen) == 2:  # a table with tokens won and a reveal shown
                            players[0].wait_for_timeout(900)  # let the cards finish turning
                            players[0].screenshot(
                                path=str(screenshots / "play.png"), full_page=True
                            )
                            watcher.screenshot(path=str(screenshots / "watch.png"), full_page=True)
        if state(players[0])["phase"] == "ended":
            break
        assert acted, "nobody could act, yet the match is not over"
    else:
        pytest.fail("the match did not end")

    final = version(players[0])
    for page in (*players, watcher):
        wait_version(page, final)
        page.wait_for_selector("#result")
        # The header says the match is over, not "live".
        page.wait_for_selector("#live-state:text-is('ended')")
        assert page.inner_text("#status").startswith("Match ended")
    players[0].wait_for_selector("#end .why")
    # Each player's browser kept the service's receipts of the match (docs/audit.md).
    for page in players:
        held = page.evaluate(
            f"JSON.parse(localStorage.getItem('matcha.receipts.{match_id}') || '[]')"
        )
        assert held and held[-1]["version"] <= final and all(r["signature"] for r in held)
    assert players[0].query_selector("#receipts") is not None
    assert watcher.evaluate(f"localStorage.getItem('matcha.receipts.{match_id}')") in (None, "[]")
    players[0].screenshot(path=str(screenshots / "play-ended.png"), full_page=True)
    assert not serious_a11y_violations(players[0]), serious_a11y_violations(players[0])

    # The end screen explains the result in the game's words (RULES §6, §9).
    outcome = api.call("GET", f"/api/matches/{match_id}/outcome")
    assert isinstance(outcome, dict)
    told_end = " ".join(t.inner_text() for t in players[0].query_selector_all("#end .why"))
    if outcome["decided_by"] == "winning_set":
        for won in outcome["seats"][outcome["winner"]]["winning_sets"]:
            words = (
                "one token of each of the five kinds"
                if won["way"] == "one_of_each"
                else f"{won['count']} {won['kind']}"
            )
            assert words in told_end, (told_end, won)
    elif outcome["decided_by"] in ("comparison", "hand_limit", "draw"):
        assert "token comparison" in told_end, told_end
        for step in outcome["comparison"]:
            line = f"{step['kind']} {step['counts'][0]}{EN_DASH}{step['counts'][1]}"
            assert line in told_end, told_end
    else:
        assert outcome["decided_by"] in told_end or "resigned" in told_end, told_end

    # The log names the opponent's cards once its own reveal showed them.
    players[0].click("#log >> xpath=.. >> summary")
    log_text = players[0].inner_text("#log")
    for event in events_so_far(admin_database_url, match_id):
        if isinstance(event, RoundRevealed):
            for o in event.outcomes:
                if o.shown and o.cards[1] is not None:
                    assert f"It was {o.cards[1]}, shown at the reveal." in log_text, (o, log_text)
    # A screen reader heard the end through the one live region that outlives redraws.
    for page in (*players, watcher):
        page.wait_for_selector("#announce:has-text('The match is over.')")

    # The pages agree with the API on the winner.
    truth = api.call("GET", f"/api/matches/{match_id}", alice["token"])
    assert isinstance(truth, dict)
    winner = truth["result"]["winner"]
    for page in (*players, watcher):
        assert page.get_attribute("#result", "data-winner") == (
            "none" if winner is None else str(winner)
        )
        shown = _tokens_on(page)
        expected = {
            (seat, k): n for seat, s in enumerate(truth["seats"]) for k, n in s["tokens"].items()
        }
        assert shown == expected

    # The spectator saw each reveal, live, explained in words.
    events = full_events(admin_database_url, match_id)
    revealed = {f"{e.hand}:{e.round}": e for e in events if isinstance(e, RoundRevealed)}
    told = {
        li.get_attribute("data-key"): li.inner_text()
        for li in watcher.query_selector_all("#reveals li")
    }
    assert revealed and told.keys() == revealed.keys()
    names = ("alice", "bob")
    for key, text in told.items():
        for outcome in revealed[key].outcomes:
            # Cards turned face up are named, with whose they were and whether they matched...
            said = text.lower()
            if outcome.shown and all(outcome.matched):
                assert "both matched" in said
            if outcome.shown:
                for seat, card in enumerate(outcome.cards):
                    verdict = (
                        ""
                        if all(outcome.matched)
                        else (" matched" if outcome.matched[seat] else " did not")
                    )
                    assert f"{names[seat]}'s {card}{verdict}".lower() in said, (text, outcome)
            # ...and every token given is told, to whom.
            for award in outcome.given:
                kind = "a chasen" if award.kind == "chasen" else award.kind
                assert f"{names[award.seat]} takes {kind}" in text, (text, award)

    # Nothing hidden reached the spectator: not in a frame, not in the page, while the match ran.
    end_version = next(i + 1 for i, e in enumerate(events) if isinstance(e, MatchEnded))
    public: set[str] = set()
    checked = 0
    for raw in frames:
        frame = json.loads(raw)
        if frame.get("kind") != "event" or frame["version"] >= end_version:
            continue
        event = events[frame["version"] - 1]
        codes = set(CARD_CODE.findall(json.dumps(frame["entry"])))
        assert codes <= public_cards(event), (frame["version"], event, codes)
        checked += 1
    assert checked >= len(snapshots) - 1
    for at, html in snapshots:
        if at >= end_version:
            continue
        public = set().union(*(public_cards(e) for e in events[:at]))
        codes = set(CARD_CODE.findall(html))
        assert codes <= public, (at, codes - public)
        table_codes = set(re.findall(r'data-card="([A-Z]\d)"', html.split('id="reveals"')[0]))
        assert not table_codes & hidden_at(events, at), (at, table_codes & hidden_at(events, at))

    # The replay: step from the first frame to the last; it ends as the match did.
    replay = api.call("GET", f"/api/matches/{match_id}/replay")
    assert isinstance(replay, dict)
    total = replay["frames"]
    assert total == len(events)
    first_deal = next(f["version"] for f in replay["summary"] if f["type"] == "hand_dealt")
    watcher.goto(f"{app_url}/replay/{match_id}")
    # It opens at the first deal (frame 1, the match's creation, is an empty table)...
    watcher.wait_for_selector(f"#frame-no:text('frame {first_deal} of {total}')")
    # (the counter moves at once; the frame is drawn once it has been fetched)
    watcher.wait_for_selector(".tatami .tea [data-card]", timeout=10_000)
    assert watcher.query_selector_all(".tatami .tea [data-card]")
    watcher.click("#first")
    watcher.wait_for_selector(f"#frame-no:text('frame 1 of {total}')")
    for n in range(2, total + 1):
        watcher.click("#forward")
        watcher.wait_for_selector(f"#frame-no:text('frame {n} of {total}')")
    watcher.wait_for_selector("#result")
    assert watcher.get_attribute("#result", "data-winner") == (
        "none" if winner is None else str(winner)
    )
    assert _tokens_on(watcher) == expected
    assert watcher.url.endswith(f"?frame={total}")
    # Both hands are shown once the match is over; the viewer may hide them.
    assert watcher.query_selector_all(".seat .hand [data-card]")
    watcher.uncheck("#show-hands")
    assert not watcher.query_selector_all(".seat .hand [data-card]")
    watcher.check("#show-hands")

    # Step back, play the last frames at 4x until it stops by itself at the end.
    for n in (total - 1, total - 2):
        watcher.click("#back")
        watcher.wait_for_selector(f"#frame-no:text('frame {n} of {total}')")
    watcher.select_option("#speed", "4")
    watcher.click("#play")
    watcher.wait_for_selector("#play:text('Pause')")
    watcher.wait_for_selector(f"#frame-no:text('frame {total} of {total}')", timeout=5000)
    watcher.wait_for_selector("#play:text('Play')", timeout=5000)

    # Jump to a reveal, and open a shared link to one frame.
    reveal_at = next(f["version"] for f in replay["summary"] if f["type"] == "round_revealed")
    watcher.select_option("#jump", str(reveal_at))
    watcher.wait_for_selector(f"#frame-no:text('frame {reveal_at} of {total}')")
    watcher.wait_for_selector(".reveal")
    watcher.wait_for_timeout(900)  # let the cards finish turning
    watcher.screenshot(path=str(screenshots / "replay.png"), full_page=True)
    shared = contexts[1].new_page()
    shared.goto(f"{app_url}/replay/{match_id}?frame={reveal_at}")
    shared.wait_for_selector(f"#frame-no:text('frame {reveal_at} of {total}')")
    assert shared.get_attribute(".table", "data-version") == str(reveal_at)
    # The scrub bar moves to any frame.
    shared.fill("#scrub", "5")
    shared.wait_for_selector(f"#frame-no:text('frame 5 of {total}')")

    # Everything came from the service itself: no CDN, no web font, nothing else.
    assert any(u.endswith("/static/style.css") for u in requested)
    host = app_url.split("//", 1)[1]
    elsewhere = {u for u in requested if u.split("//", 1)[-1].split("/", 1)[0] != host}
    assert not {u for u in elsewhere if not u.startswith("data:")}, elsewhere

    # The ratings job (run here in-process, as a worker would) puts both on the
    # ladder's leaderboard, each with a rating chart of this one match.
    update_ladder(ladder, database_url=database_url)
    lobby = contexts[2].new_page()
    lobby.goto(f"{app_url}/")
    for pid in (alice["id"], bob["id"]):
        lobby.wait_for_selector(
            f'[data-ladder="{ladder}"] tr[data-player="{pid}"] svg[data-points="2"]'
        )
    lobby.wait_for_selector(f'#finished tr[data-match="{match_id}"] a[href="/replay/{match_id}"]')
    lobby.screenshot(path=str(screenshots / "lobby.png"), full_page=True)

    # Now rated: the end screen gives each player's rating change, as the ladder has it.
    players[0].reload()
    players[0].wait_for_selector("#end [data-change]")
    rated = api.call("GET", f"/api/matches/{match_id}/outcome")
    assert isinstance(rated, dict) and rated["ratings_applied"]
    shown_changes = [
        float(el.get_attribute("data-change") or "nan")
        for el in players[0].query_selector_all("#end [data-change]")
    ]
    expected_changes = [s["rating_after"] - s["rating_before"] for s in rated["seats"]]
    assert shown_changes == pytest.approx(expected_changes, abs=0.06)

    assert not errors, errors
    for ctx in contexts:
        ctx.close()


def _tokens_on(page: Any) -> dict[tuple[int, str | None], int]:
    return {
        (seat, tok.get_attribute("data-kind")): int(tok.get_attribute("data-count") or -1)
        for seat in (0, 1)
        for tok in page.query_selector_all(f'.seat[data-seat="{seat}"] .tok')
    }
