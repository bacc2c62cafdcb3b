"""Reading and driving the table pages by their DOM, as a player would by eye and click."""

from __future__ import annotations

import json
import random
import re
from typing import Any

CARD_CODE = re.compile(r"\b(?:[MCWS][1-4]|Z[12])\b")

STATE_JS = """() => {
  const t = document.querySelector('.table');
  if (!t) return null;
  const hand = [...document.querySelectorAll('.seat.near .hand button.card')].map((b) => ({
    card: b.dataset.card,
    targets: (b.dataset.legalTargets || '').split(' ').filter(Boolean),
    disabled: b.disabled,
  }));
  const pass = document.querySelector('#pass');
  const result = document.querySelector('#result');
  return {
    version: Number(t.dataset.version),
    phase: t.dataset.phase,
    toMove: t.dataset.toMove,
    keeping: !!document.querySelector('#keep-panel'),
    hand,
    canPass: !!pass && !pass.disabled,
    winner: result ? result.dataset.winner : null,
  };
}"""


def state(page: Any) -> dict[str, Any]:
    page.wait_for_selector(".table", state="attached")
    found: dict[str, Any] | None = page.evaluate(STATE_JS)
    assert found is not None, "the page shows no table"
    return found


def version(page: Any) -> int:
    return state(page)["version"]


def wait_version(page: Any, at_least: int, timeout_ms: int = 10_000) -> None:
    page.wait_for_function(
        "v => { const t = document.querySelector('.table'); return t && +t.dataset.version >= v; }",
        arg=at_least,
        timeout=timeout_ms,
    )


def take_turn(page: Any, rng: random.Random) -> bool:
    """Act if this page's seat may act now: keep, play a card on a legal target, or pass.

    The choice is made from what the page shows: the hand's buttons list their
    legal targets (``data-legal-targets``); the pass button is enabled or not.
    Returns whether it acted (and the page then showed a newer version).
    """
    st = state(page)
    if st["phase"] == "ended":
        return False
    before = st["version"]
    if st["keeping"]:
        for held in st["hand"]:
            if rng.random() < 0.5:
                page.click(f'.seat.near button.card[data-card="{held["card"]}"]')
        page.click("#keep")
    else:
        playable = [c for c in st["hand"] if c["targets"] and not c["disabled"]]
        if not playable and not st["canPass"]:
            return False
        if playable and (not st["canPass"] or rng.random() < 0.75):
            choice = rng.choice(playable)
            target = rng.choice(choice["targets"])
            page.click(f'.seat.near button.card[data-card="{choice["card"]}"]')
            page.click(f'button.target[data-target="{target}"]')
        else:
            page.click("#pass")
    wait_version(page, before + 1)
    return True


def sign_in_as(context: Any, token: str, player_id: str, name: str) -> None:
    """Put a token where the lobby's sign-in form would keep it."""
    me = json.dumps(json.dumps({"id": player_id, "name": name}))
    context.add_init_script(
        f"localStorage.setItem('matcha.token', {json.dumps(token)});"
        f" localStorage.setItem('matcha.me', {me});"
    )


VIEWPORTS = {"desktop": {"width": 1280, "height": 800}, "phone": {"width": 390, "height": 844}}

_AXE: Any = None


def serious_a11y_violations(page: Any) -> list[str]:
    """axe-core's (axe-playwright-python ships it) serious and critical violations."""
    global _AXE
    if _AXE is None:
        from axe_playwright_python.sync_playwright import Axe

        _AXE = Axe()
    # A token flying to its winner is a copy in mid-animation (half faded):
    # axe judges the settled page, so wait (bounded) until none is in flight.
    page.wait_for_function("() => !document.querySelector('.flying')", timeout=10_000)
    found = _AXE.run(page).response["violations"]
    return [
        f"{v['id']} ({v['impact']}): {v['help']} — {[n['target'] for n in v['nodes']][:3]}"
        for v in found
        if v.get("impact") in ("serious", "critical")
    ]


def uncovered(page: Any, selector: str) -> list[str | None]:
    """Elements matching ``selector`` whose centre is covered by something else
    (what a tap there would hit instead), after scrolling each into view."""
    covered = []
    for el in page.query_selector_all(selector):
        el.scroll_into_view_if_needed()
        hit = page.evaluate(
            """(el) => { const r = el.getBoundingClientRect();
                const at = document.elementFromPoint(r.left + r.width / 2, r.top + r.height / 2);
                if (at && (el === at || el.contains(at))) return null;
                return at ? at.outerHTML.slice(0, 80) : 'nothing'; }""",
            el,
        )
        if hit is not None:
            covered.append(hit)
    return covered
