// The play and watch pages: one table, kept live. "play" sends the token and
// lets the seat act; "watch" never sends it, so it shows public information only.
import { api, ApiError, auth } from "./api.js";
import { $, announce, fill, h, plural, toast } from "./dom.js";
import { back, card } from "./cards.js";
import { explainReveal } from "./explain.js";
import { endPanel, followOutcome } from "./endscreen.js";
import { flyTokens } from "./fly.js";
import { follow } from "./live.js";
import { oddsBar } from "./odds.js";
import { keepReceipt, receiptsLink, receiptsOf } from "./receipts.js";
import { verifiedBadge } from "./verified.js";
import { isBot, learnMatch, nameOf, playerLink } from "./names.js";
import { clockBar, tickClocks, timeControlText } from "./clocks.js";
import { bottomSeat, canPass, legalPlays, PLACE, renderTable, seatName, status } from "./table.js";

/** The card a face-down play turned out to be, once the viewer's own reveal shows it. */
function shownLater(ev, reveals) {
  const r = reveals && reveals[`${ev.hand}:${ev.round}`];
  const o = r && r.outcomes.find((x) => x.target === ev.target);
  return o ? o.cards[ev.seat] : null;
}

/** One line per event for the log; never more than this viewer's own entries show. */
export function describe(ev, view, reveals = {}) {
  const who = (s) => seatName(view, s);
  switch (ev.type) {
    case "match_created": return "The match was created; the seed's commitment is published.";
    case "hand_dealt": return `Hand ${ev.hand} dealt; ${who(ev.dealer)} ${view.viewer === ev.dealer ? "deal" : "deals"}.`;
    case "card_played": {
      const later = ev.card ? null : shownLater(ev, reveals);
      const what = ev.card ? `${ev.card} ` : "a card ";
      const tail = later ? ` It was ${later}, shown at the reveal.` : "";
      return `${who(ev.seat)} played ${what}face down beside the round ${ev.round} ${ev.target} target.${tail}`;
    }
    case "passed": return `${who(ev.seat)} passed${ev.automatic ? " (no legal play)" : ""}.`;
    case "round_revealed": return `Round ${ev.round} (${PLACE[ev.round]} pair) of hand ${ev.hand} revealed.`;
    case "hand_ended": return `Hand ${ev.hand} ended: nobody has won yet.`;
    case "cards_kept": return `${who(ev.seat)} kept ${ev.cards ? ev.cards.join(" ") || "no cards" : ev.count == null ? "some cards (secret until the deal)" : plural(ev.count, "card")}.`;
    case "match_ended": return ev.winner === null ? "The match ended in a draw." : `The match ended: ${who(ev.winner)} ${view.viewer === ev.winner ? "win" : "wins"} (${String(ev.reason).replace("_", " ")}).`;
    case "match_annulled": return "An administrator annulled the match.";
    default: return `${ev.type[0].toUpperCase()}${ev.type.slice(1).replace(/_/g, " ")}.`;
  }
}

/** The story of a reveal, beside the table: who played what, what each target gave. */
export function revealPanel(reveal, view) {
  const low = bottomSeat(view);
  const lines = explainReveal(reveal, view, nameOf);
  const side = (o, seat) =>
    o.cards[seat] ? card(o.cards[seat], { small: true })
      : o.placed[seat] ? back("face-down card, never shown", true) : h("span", { class: "muted none" }, "—");
  return h("section", { class: "panel reveal", "data-key": `${reveal.hand}:${reveal.round}`, "aria-live": "polite",
    "aria-label": `Reveal of hand ${reveal.hand}, round ${reveal.round}` },
  h("h2", {}, `Round ${reveal.round} revealed`, h("small", { class: "muted" }, ` · hand ${reveal.hand}, ${PLACE[reveal.round]} pair`)),
  h("div", { class: "flip" }, reveal.outcomes.map((o) => h("div", { class: "duel", "data-target": o.target },
    h("small", {}, h("b", {}, o.target), ` · tea ${o.tea_card}`),
    h("span", { class: "pairing" }, side(o, low), h("span", { class: "vs", "aria-hidden": "true" }, "vs"), side(o, 1 - low))))),
  lines.map((t) => h("p", { class: "why" }, t)));
}

export async function matchPage(root, matchId, mode) {
  const token = mode === "play" ? auth.token : "";
  const ui = { interactive: mode === "play", selected: null, keep: new Set(), presence: null, odds: null, reveals: {}, fresh: null };
  let view = null;
  let viewAt = Date.now();   // when the view (and so its clocks) arrived
  let busy = false;
  let reveal = null;
  const entries = [];        // the log as this viewer's own entries show it
  let resignArmed = false;
  let logOpen = false;
  let lastStatus = "";
  let message = "";          // the last refusal, in the service's own words
  let liveState = "connecting…";
  let outcome = null;
  let outcomeAsked = false;
  let expected = null;       // each seat's expected score before the match, where the ladder says
  const reveals = [];

  const get = () => api(`/api/matches/${encodeURIComponent(matchId)}`, { anonymous: mode !== "play" });

  function noteReveal(r, quiet = false) {
    if (!r) return;
    const key = `${r.hand}:${r.round}`;
    if (ui.reveals[key]) return;
    ui.reveals[key] = r;
    reveal = r;
    reveals.push({ key, text: `Hand ${r.hand}, round ${r.round}: ${explainReveal(r, view, nameOf).join(" ")}` });
    if (!quiet) {
      announce(reveals.at(-1).text);
      ui.fresh = key;
      ui.flyPending = r;
      setTimeout(() => { if (ui.fresh === key) { ui.fresh = null; draw(); } }, 1600);
    }
  }

  function setView(v) {
    if (view && v.version < view.version) return;
    const hand = view ? view.hand : v.hand;
    view = v;
    viewAt = Date.now();
    if (v.hand !== hand) ui.selected = null;
    if (!v.must_keep) ui.keep.clear();
    if (ui.selected && !legalPlays(v)[ui.selected]) ui.selected = null;
    noteReveal(v.last_reveal);
    const said = status(v);
    if (said !== lastStatus) { lastStatus = said; announce(v.phase === "ended" ? `The match is over. ${said}` : said); }
    if (v.phase === "ended") {
      liveState = "ended";
      if (!outcomeAsked) { outcomeAsked = true; followOutcome(matchId, (o) => { outcome = o; draw(); }); }
    }
    draw();
  }

  let inflight = null;
  let again = false;
  async function refresh() {
    if (inflight) { again = true; return; }
    inflight = get().then(setView).catch((e) => toast(e.detail || String(e), "error"));
    await inflight;
    inflight = null;
    if (again) { again = false; refresh(); }
  }

  // A move goes on the live socket while it is open (docs/live.md "Commands on the
  // socket"), else over HTTP; a socket that drops before it answers is followed by
  // the same command over HTTP with the same idempotency key: never applied twice.
  let live = null;
  async function command(path, body) {
    const key = (crypto.randomUUID && crypto.randomUUID()) || `${Date.now()}-${Math.random()}`;
    const onSocket = live && live.command(path, { ...body, idempotency_key: key });
    if (onSocket) {
      try {
        return await onSocket;
      } catch (p) {
        if (p.code !== "dropped" && p.code !== "timeout") throw new ApiError(p.status, p.code, p.detail);
      }
    }
    return api(`/api/matches/${encodeURIComponent(matchId)}/${path}`, {
      method: "POST", body, headers: { "Idempotency-Key": key } });
  }

  async function send(path, body) {
    if (busy) return;
    busy = true;
    try {
      const res = await command(path, { ...body, expected_version: view.version });
      keepReceipt(matchId, res.receipt);
      ui.selected = null;
      message = "";
      setView(res.view);
    } catch (e) {
      const detail = e instanceof ApiError ? e.detail : String(e);
      message = detail;
      toast(detail, "error");
      refresh();
    } finally {
      busy = false;
      draw();
    }
  }

  ui.onCard = (c) => {
    if (view.must_keep) {
      if (ui.keep.has(c)) ui.keep.delete(c); else ui.keep.add(c);
      draw();
      return;
    }
    ui.selected = ui.selected === c ? null : c;
    draw();
    const first = root.querySelector("button.target");
    if (ui.selected && first) first.focus();
  };
  ui.onTarget = (round, target) => send("play", { card: ui.selected, target });

  function actions() {
    if (mode !== "play" || !view || typeof view.viewer !== "number" || view.phase === "ended") return null;
    if (view.must_keep) {
      const hand = view.seats[view.viewer].hand || [];
      return h("div", { class: "actions panel", id: "keep-panel" },
        h("p", {}, "Nobody won this hand. Choose the cards to keep for the next hand (tap them), then confirm."),
        h("button", { class: "btn primary", id: "keep", type: "button", disabled: busy,
          onclick: () => send("keep", { cards: hand.filter((c) => ui.keep.has(c)) }) },
        `Keep ${plural(ui.keep.size, "card")}`),
        h("button", { class: "btn", type: "button", onclick: () => { hand.forEach((c) => ui.keep.add(c)); draw(); } }, "Select all"));
    }
    const mine = view.to_move === view.viewer && view.phase === "playing";
    return h("div", { class: "actions" },
      h("span", { class: `hint${mine ? " mine" : ""}`, id: "hint" },
        !mine ? "Waiting for the other player…"
          : ui.selected ? `Now choose a target for ${ui.selected} (highlighted), or tap it again to cancel.`
            : "Your turn: pick a card from your hand, then a target — or pass."),
      h("button", { class: "btn", id: "pass", type: "button", disabled: busy || !canPass(view),
        onclick: () => send("pass", {}) }, "Pass"),
      h("button", { class: "btn danger", id: "resign", type: "button", disabled: busy,
        onclick: () => {
          if (!resignArmed) { resignArmed = true; draw(); setTimeout(() => { resignArmed = false; draw(); }, 4000); return; }
          resignArmed = false;
          send("resign", {});
        } }, resignArmed ? "Really resign?" : "Resign"));
  }

  // Presence tells a player their opponent has left; on a timed match their
  // clock keeps running, and running out loses (or aborts a no-show) the same way.
  function opponentAway() {
    if (mode !== "play" || typeof view.viewer !== "number" || view.phase === "ended") return null;
    if (!ui.presence || ui.presence.players[1 - view.viewer]) return null;
    if (isBot(view.seats[1 - view.viewer].player)) return null; // a bot is always there
    const who = nameOf(view.seats[1 - view.viewer].player);
    return h("p", { class: "panel notice", id: "opponent-away", role: "status" },
      `${who} has left the match. `,
      view.clocks ? "Their clock keeps running: if it runs out, you win." : "You may wait for them to come back.");
  }

  function draw() {
    if (!view) return;
    const focus = document.activeElement;
    const key = focus && (focus.id || (focus.dataset && (focus.dataset.card || (focus.dataset.target && `${focus.dataset.round}${focus.dataset.target}`))));
    ui.plays = mode === "play" ? legalPlays(view) : {};
    ui.keeping = !!view.must_keep;
    const notSeat = mode === "play" && typeof view.viewer !== "number"
      ? h("p", { class: "panel" }, auth.me ? "You do not hold a seat in this match. " : h("a", { href: "/#sign-in" }, "Sign in to play. "),
        h("a", { href: `/watch/${matchId}` }, "Watch it instead"), ".")
      : null;
    const [p0, p1] = view.seats.map((s) => s.player);
    const ended = view.phase === "ended";
    const shownReveal = reveal && reveal.hand === view.hand ? reveal : null;
    fill(root,
      h("div", { class: "match-head" },
        h("h1", {}, playerLink(p0), h("span", { class: "vs" }, " vs "), playerLink(p1)),
        h("span", { class: `pill${ended ? " ended" : ""}`, id: "live-state" }, liveState),
        mode === "watch" ? h("span", { class: "badge", id: "spectators", "data-count": ui.presence ? ui.presence.spectators : "" },
          ui.presence ? `${ui.presence.spectators} watching` : "") : null,
        h("span", { class: "badge" }, view.ruleset.name),
        view.clocks ? h("span", { class: "badge", id: "time-control" }, timeControlText(view.clocks.control)) : null,
        expected ? h("span", { class: "badge", id: "expected", title: "expected score before the match, from the ladder's ratings" },
          `expected ${Math.round(100 * expected.expected_a)}–${Math.round(100 * expected.expected_b)}`) : null,
        ended ? h("a", { class: "btn", href: `/replay/${matchId}` }, "Watch the replay") : null,
        mode === "play" ? receiptsLink(matchId) : null),
      notSeat,
      mode === "watch" && !ended ? oddsBar(ui.odds, view.seats.map((s) => nameOf(s.player))) : null,
      clockBar(view.clocks, view.seats.map((s) => nameOf(s.player)), viewAt),
      opponentAway(),
      h("p", { class: "status", id: "status" }, status(view)),
      h("p", { id: "message", class: "message", role: "status" }, message),
      h("div", { class: "match-grid" },
        h("div", { class: "board" },
          ended ? [endPanel(outcome, view), verifiedBadge(matchId, receiptsOf(matchId))] : null,
          renderTable(view, ui),
          actions()),
        h("aside", { class: "side", "aria-label": "What happened" },
          shownReveal ? revealPanel(shownReveal, view) : h("section", { class: "panel reveal-empty" },
            h("h2", {}, "Reveals"), h("p", { class: "muted" }, "When both players have passed, the round's cards turn over on the table and the story is told here.")),
          h("details", { class: "panel", open: true }, h("summary", {}, `All reveals (${reveals.length})`),
            h("ol", { class: "log", id: "reveals", tabindex: 0, "aria-label": "Every reveal of the match" }, reveals.map((r) => h("li", { "data-key": r.key }, r.text)))),
          h("details", { class: "panel", open: logOpen, ontoggle: (e) => { logOpen = e.target.open; } },
            h("summary", {}, "Match log"),
            h("ol", { class: "log", id: "log", tabindex: 0, "aria-label": "Match log" }, entries.slice(-80).map((e) =>
              h("li", { value: e.version }, describe(e.event, view, ui.reveals))))))));
    if (key) {
      const again = root.querySelector(`#${CSS.escape(key)}`) || root.querySelector(`[data-card="${CSS.escape(key)}"]:is(button)`)
        || root.querySelector(`button.target[data-round="${key[0]}"][data-target="${key.slice(1)}"]`);
      if (again && !again.disabled) again.focus();
    }
    if (ui.flyPending) { const r = ui.flyPending; ui.flyPending = null; flyTokens(root, r); }
  }

  try {
    view = await get();
  } catch (e) {
    fill(root, h("h1", {}, mode === "play" ? "Play" : "Watch"), h("p", { class: "panel", id: "message" }, e.detail || String(e)));
    if (e.status === 401) auth.clear();
    return;
  }
  // The log so far, so a late arrival's reveals list and match log are whole.
  const past = await api(`/api/matches/${encodeURIComponent(matchId)}/events?after=0&limit=1000`,
    { anonymous: mode !== "play" }).catch(() => []);
  await learnMatch(view.seats.map((s) => s.player));
  const ladderId = past[0] && past[0].event.ladder_id;
  if (ladderId) {
    // GET /api/ladders/{id}/expected (CONTRACTS 2), where the service has it; else nothing is shown.
    const [a, b] = view.seats.map((s) => encodeURIComponent(s.player));
    api(`/api/ladders/${encodeURIComponent(ladderId)}/expected?a=${a}&b=${b}`, { anonymous: true })
      .then((e) => { expected = e; draw(); }).catch(() => {});
  }
  for (const e of past.filter((x) => x.version <= view.version)) {
    entries.push(e);
    if (e.event.type === "round_revealed") noteReveal(e.event, true);
  }
  setView(view);
  // Both clocks tick between views; when the running one reaches zero, ask
  // again (the service records the time-out; the next view shows the result).
  let askedAtZero = false;
  setInterval(() => {
    if (!view || !view.clocks || view.phase === "ended") return;
    tickClocks(root, view.clocks, viewAt);
    const out = view.clocks.seats.find((c) => c.running && c.remaining_ms - (Date.now() - viewAt) <= 0);
    if (out && !askedAtZero) {
      askedAtZero = true;
      // A player whose opponent's clock ran out claims the win at once (the
      // service checks the clock); anyone else waits for the service's sweep.
      const claim = mode === "play" && typeof view.viewer === "number" && out.seat !== view.viewer
        ? api(`/api/matches/${encodeURIComponent(matchId)}/time-out`, { method: "POST", body: {} }).then(setView)
        : Promise.resolve();
      claim.catch(() => {}).finally(() => setTimeout(() => { askedAtZero = false; refresh(); }, 1000));
    }
  }, 200);

  live = follow(matchId, {
    since: view.version,
    token,
    onEvent: (f) => {
      if (f.receipt) keepReceipt(matchId, f.receipt);  // a seat's frames carry the service's signatures
      const e = f.entry;
      if (e && e.event) {
        entries.push(e);
        if (e.event.type === "round_revealed") noteReveal(e.event);
      }
      if (!view || f.version > view.version) refresh(); else draw();
    },
    onPresence: (p) => { ui.presence = p; draw(); },
    onOdds: (o) => { if (mode === "watch") { ui.odds = o; draw(); } },
    onPoll: refresh,
    onState: (t) => { if (view && view.phase === "ended") return; liveState = t; const el = $("#live-state"); if (el) el.textContent = t; },
  });
}
