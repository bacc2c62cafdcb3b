// The play and watch pages: one table, kept live. "play" sends the token and
// lets the seat act; "watch" never sends it, so it shows public information only.
import { api, ApiError, auth } from "./api.js";
import { $, announce, fill, h, plural, toast } from "./dom.js";
import { back, card } from "./cards.js";
import { explainEnd, explainReveal } from "./explain.js";
import { follow } from "./live.js";
import { learnMatch, nameOf } from "./names.js";
import { bottomSeat, canPass, legalPlays, renderTable, seatName, status } from "./table.js";

/** One line per event for the log; never more than the entry shows this viewer. */
export function describe(ev, view) {
  const who = (s) => seatName(view, s);
  switch (ev.type) {
    case "hand_dealt": return `Hand ${ev.hand} dealt; ${who(ev.dealer)} ${view.viewer === ev.dealer ? "deal" : "deals"}.`;
    case "card_played":
      return `${who(ev.seat)} played ${ev.card ? ev.card + " " : "a card "}face down beside the round ${ev.round} ${ev.target} target.`;
    case "passed": return `${who(ev.seat)} passed${ev.automatic ? " (no legal play)" : ""}.`;
    case "round_revealed": return `Round ${ev.round} revealed.`;
    case "hand_ended": return `Hand ${ev.hand} ended: nobody has won yet.`;
    case "cards_kept": return `${who(ev.seat)} kept ${ev.cards ? ev.cards.join(" ") || "no cards" : plural(ev.count, "card")}.`;
    default: return `${ev.type[0].toUpperCase()}${ev.type.slice(1).replace(/_/g, " ")}.`;
  }
}

/** A round's reveal: cards turning over, the outcome in words. `since` (ms): when it
 * first appeared, so a redraw continues its animation rather than restart it. */
export function revealPanel(reveal, view, since = 0) {
  const low = bottomSeat(view);
  const lines = explainReveal(reveal, view, nameOf);
  const side = (o, seat) =>
    o.cards[seat] ? card(o.cards[seat], { small: true })
      : o.placed[seat] ? back("face-down card, never shown", true) : h("span", { class: "muted" }, "—");
  const tag = (seat) => h("small", { class: "muted" }, seatName(view, seat));
  const age = since ? Math.round(performance.now() - since) : 5000;
  return h("section", { class: "panel reveal", "data-key": `${reveal.hand}:${reveal.round}`, "aria-live": "polite",
    style: `--age:-${age}ms`,
    "aria-label": `Reveal of hand ${reveal.hand}, round ${reveal.round}` },
  h("h2", {}, `Hand ${reveal.hand}, round ${reveal.round} revealed`),
  h("div", { class: "flip" }, reveal.outcomes.map((o) => h("div", { class: "duel", "data-target": o.target },
    h("small", {}, h("b", {}, o.target), ` · tea ${o.tea_card}:`), tag(low), side(o, low), tag(1 - low), side(o, 1 - low)))),
  lines.map((t) => h("p", { class: "why" }, t)));
}

export async function matchPage(root, matchId, mode) {
  const token = mode === "play" ? auth.token : "";
  const ui = { interactive: mode === "play", selected: null, keep: new Set(), presence: null };
  let view = null;
  let busy = false;
  let reveal = null;
  const seen = new Set();
  const log = [];
  let resignArmed = false;
  let revealSince = 0;
  let logOpen = false;
  let lastStatus = "";
  let message = "";          // the last refusal, in the service's own words
  let liveState = "connecting…";
  const reveals = [];

  const get = () => api(`/api/matches/${encodeURIComponent(matchId)}`, { anonymous: mode !== "play" });

  function noteReveal(r, quiet = false) {
    if (!r) return;
    const key = `${r.hand}:${r.round}`;
    if (seen.has(key)) return;
    seen.add(key);
    reveal = r;
    revealSince = performance.now();
    reveals.push({ key, text: `Hand ${r.hand}, round ${r.round}: ${explainReveal(r, view, nameOf).join(" ")}` });
    if (!quiet) announce(reveals.at(-1).text);
  }

  function setView(v) {
    if (view && v.version < view.version) return;
    const hand = view ? view.hand : v.hand;
    view = v;
    if (v.hand !== hand) ui.selected = null;
    if (!v.must_keep) ui.keep.clear();
    if (ui.selected && !legalPlays(v)[ui.selected]) ui.selected = null;
    noteReveal(v.last_reveal);
    const said = status(v);
    if (said !== lastStatus) { lastStatus = said; announce(said); }
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

  async function send(path, body) {
    if (busy) return;
    busy = true;
    try {
      const res = await api(`/api/matches/${encodeURIComponent(matchId)}/${path}`, {
        method: "POST", body: { ...body, expected_version: view.version } });
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
        h("p", {}, "Nobody won this hand. Choose the cards to keep for the next hand (click them), then confirm."),
        h("button", { class: "btn primary", id: "keep", type: "button", disabled: busy,
          onclick: () => send("keep", { cards: hand.filter((c) => ui.keep.has(c)) }) },
        `Keep ${plural(ui.keep.size, "card")}`),
        h("button", { class: "btn", type: "button", onclick: () => { hand.forEach((c) => ui.keep.add(c)); draw(); } }, "Select all"));
    }
    const mine = view.to_move === view.viewer && view.phase === "playing";
    return h("div", { class: "actions" },
      h("span", { class: "muted", id: "hint" },
        !mine ? "Waiting for the other player…"
          : ui.selected ? `Now choose a target for ${ui.selected} (highlighted), or click it again to cancel.`
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

  function draw() {
    if (!view) return;
    const focus = document.activeElement;
    const key = focus && (focus.id || (focus.dataset && (focus.dataset.card || (focus.dataset.target && `${focus.dataset.round}${focus.dataset.target}`))));
    ui.plays = mode === "play" ? legalPlays(view) : {};
    ui.keeping = !!view.must_keep;
    const ended = view.result ? h("p", { class: "result", id: "result", "data-winner": view.result.winner ?? "none" },
      explainEnd(view, nameOf)) : null;
    const notSeat = mode === "play" && typeof view.viewer !== "number"
      ? h("p", { class: "panel" }, auth.me ? "You do not hold a seat in this match. " : h("a", { href: "/#sign-in" }, "Sign in to play. "),
        h("a", { href: `/watch/${matchId}` }, "Watch it instead"), ".")
      : null;
    fill(root,
      h("div", { class: "row" },
        h("h1", {}, mode === "play" ? "Play" : "Watch", " ", h("small", { class: "muted" }, `match ${matchId.slice(0, 8)}`)),
        h("span", { class: "muted", id: "live-state" }, liveState),
        mode === "watch" ? h("span", { class: "badge", id: "spectators", "data-count": ui.presence ? ui.presence.spectators : "" },
          ui.presence ? `${ui.presence.spectators} watching` : "") : null,
        view.phase === "ended" ? h("a", { class: "btn", href: `/replay/${matchId}` }, "Replay") : null),
      notSeat,
      h("p", { class: "status", id: "status" }, status(view)),
      ended,
      h("p", { id: "message", class: "message" }, message),
      actions(),
      renderTable(view, ui),
      reveal && reveal.hand === view.hand ? revealPanel(reveal, view, revealSince) : null,
      h("h2", {}, "Reveals"),
      h("ol", { class: "log", id: "reveals" }, reveals.map((r) => h("li", { "data-key": r.key }, r.text))),
      h("details", { open: logOpen, ontoggle: (e) => { logOpen = e.target.open; } }, h("summary", {}, "Match log"),
        h("ol", { class: "log", id: "log" }, log.slice(-60).map((t) => h("li", {}, t)))));
    if (key) {
      const again = root.querySelector(`#${CSS.escape(key)}`) || root.querySelector(`[data-card="${CSS.escape(key)}"]:is(button)`)
        || root.querySelector(`button.target[data-round="${key[0]}"][data-target="${key.slice(1)}"]`);
      if (again && !again.disabled) again.focus();
    }
  }

  try {
    view = await get();
  } catch (e) {
    fill(root, h("p", { class: "panel" }, e.detail || String(e)));
    if (e.status === 401) auth.clear();
    return;
  }
  // The log so far, so a late arrival's reveals list and match log are whole.
  const entries = await api(`/api/matches/${encodeURIComponent(matchId)}/events?after=0&limit=1000`,
    { anonymous: mode !== "play" }).catch(() => []);
  await learnMatch(entries[0] && entries[0].event, view.seats.map((s) => s.player));
  for (const e of entries.filter((x) => x.version <= view.version)) {
    log.push(describe(e.event, view));
    if (e.event.type === "round_revealed") noteReveal(e.event, true);
  }
  setView(view);

  follow(matchId, {
    since: view.version,
    token,
    onEvent: (f) => {
      const ev = f.entry && f.entry.event;
      if (ev) {
        log.push(describe(ev, view));
        if (ev.type === "round_revealed") noteReveal(ev);
      }
      if (!view || f.version > view.version) refresh(); else draw();
    },
    onPresence: (p) => { ui.presence = p; draw(); },
    onPoll: refresh,
    onState: (t) => { liveState = t; const el = $("#live-state"); if (el) el.textContent = t; },
  });
}
