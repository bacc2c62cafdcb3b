// The table, drawn from one MatchView: three tatami pairs, both seats, tokens.
// Shared by the play, watch and replay pages; it shows only what the view holds.
// A revealed pair keeps its cards face up in place, each target marked with what
// it gave (from the viewer's own reveal events, `ui.reveals`).
import { h, icon, plural } from "./dom.js";
import { back, card, cardName, KIND_SYMBOL, KINDS, rankOf, suitOf, token } from "./cards.js";
import { isBot, nameOf, playerLink } from "./names.js";

export const PLACE = { 1: "left", 2: "middle", 3: "right" };

/** The seat drawn at the bottom: the viewer's own seat, else seat 0. */
export const bottomSeat = (view) => (typeof view.viewer === "number" ? view.viewer : 0);

export const wants = (t) =>
  t.target === "number" ? `wants rank ${rankOf(t.tea_card)}` : `wants ${suitOf(t.tea_card)}`;

/** The fewest tokens that could ever qualify a seat (the meter's full scale). */
function scale(rules) {
  const ways = [rules.suit_tokens_to_win, rules.chasen_tokens_to_win];
  if (rules.one_of_each_wins) ways.push(KINDS.length);
  return Math.min(...ways);
}

/** Legal plays by card, from the view's legal moves: {W2: ["number", "suit"]}. */
export function legalPlays(view) {
  const plays = {};
  for (const m of view.legal_moves || []) {
    if (m.type === "play_card") (plays[m.card] ||= []).push(m.target);
  }
  return plays;
}

export const canPass = (view) => (view.legal_moves || []).some((m) => m.type === "pass");

export function seatName(view, seat) {
  if (view.viewer === seat) return "You";
  return nameOf(view.seats[seat].player);
}

/** The result in a few words: "alice won", "a draw", "annulled". */
export function resultWords(view) {
  const r = view.result;
  if (!r) return "";
  if (r.annulled) return "annulled: no result";
  if (r.reason === "aborted") return "aborted, unrated";
  if (r.winner === null) return "a draw";
  const won = view.viewer === r.winner ? "you won" : `${seatName(view, r.winner)} won`;
  if (r.reason !== "timeout") return won;
  const loser = 1 - r.winner;
  return `${won}: ${view.viewer === loser ? "you" : seatName(view, loser)} ran out of time`;
}

export function status(view) {
  if (view.phase === "new") return "Waiting for the first deal.";
  if (view.phase === "ended") return `Match ended: ${resultWords(view)}.`;
  const where = `Hand ${view.hand} of at most ${view.ruleset.max_hands}`;
  if (view.phase === "keeping") return `${where}: choosing which cards to keep.`;
  const mover = view.to_move === null ? "" : ` · ${view.to_move === view.viewer ? "your move" : `${seatName(view, view.to_move)} to move`}`;
  return `${where} · round ${view.round} (${PLACE[view.round] || ""} pair)${mover}`;
}

function slot(target, seat, pos, outcome) {
  const c = target.cards[seat];
  const el = c ? card(c, { small: true }) : target.occupied[seat] ? back("face-down card", true) : null;
  let mark = null;
  if (outcome && outcome.placed[seat]) {
    const alone = !outcome.placed[1 - seat];
    mark = alone ? "alone" : outcome.matched[seat] ? "matched" : "missed";
  }
  return h("div", { class: `slot ${pos}${mark ? ` ${mark}` : ""}`, "data-seat": seat,
    "data-filled": target.occupied[seat] ? "1" : "0" },
  el || h("span", { class: "empty", "aria-hidden": "true" }),
  mark ? h("span", { class: "mark", "aria-label": mark === "alone" ? "alone: counts as matched" : mark },
    mark === "missed" ? "✗" : "✓") : null);
}

/** What a revealed target gave, as small chips: "+ water to alice". */
function verdict(outcome, view) {
  if (!outcome) return null;
  const given = outcome.given.map((a) => {
    const who = view.viewer === a.seat ? "you" : nameOf(view.seats[a.seat].player);
    return h("span", { class: `gain k-${a.kind}`, "data-seat": a.seat, role: "img", "aria-label": `${a.kind} to ${who}`, title: `${a.kind} to ${who}` },
      icon(KIND_SYMBOL[a.kind]), h("b", { "aria-hidden": "true" }, "+1"), h("small", { "aria-hidden": "true" }, ` ${who}`));
  });
  return h("div", { class: "verdict" }, given.length ? given : h("small", { class: "muted" }, "no token"));
}

function targetBox(view, pair, target, ui, low, high, outcome) {
  const current = view.phase === "playing" && pair.round === view.round && !pair.revealed;
  const legal = ui.selected && (ui.plays[ui.selected] || []).includes(target.target) && current;
  const label = `Round ${pair.round} ${target.target} target, tea card ${target.tea_card}, ${wants(target)}`;
  return h(legal ? "button" : "div", {
    class: `target t-${target.target}${legal ? " legal" : ""}`,
    type: legal ? "button" : null,
    "aria-label": legal ? `Play ${ui.selected} here: ${label}` : label,
    role: legal ? null : "group",
    "data-round": pair.round,
    "data-target": target.target,
    "data-legal": legal ? "1" : "0",
    onclick: legal ? () => ui.onTarget(pair.round, target.target) : null,
  },
  slot(target, high, "far", outcome),
  h("div", { class: "tea" },
    card(target.tea_card, { "aria-label": `tea card ${cardName(target.tea_card)}; ${wants(target)}` }),
    h("span", { class: "wants", "aria-hidden": "true" }, h("b", {}, target.target), " ", wants(target).replace("wants ", "→ "))),
  slot(target, low, "near", outcome),
  verdict(outcome, view));
}

function pairBox(view, pair, ui, low, high) {
  const current = view.phase === "playing" && pair.round === view.round;
  const reveal = pair.revealed ? (ui.reveals || {})[`${view.hand}:${pair.round}`] : null;
  const outcomeOf = (t) => reveal && reveal.outcomes.find((o) => o.target === t);
  const fresh = reveal && ui.fresh === `${view.hand}:${pair.round}`;
  return h("section", {
    class: `pair${current ? " current" : ""}${pair.revealed ? " revealed" : ""}${fresh ? " turning" : ""}`,
    "data-round": pair.round,
    "aria-label": `Round ${pair.round}, ${PLACE[pair.round]} pair${pair.revealed ? ", revealed" : ""}${current ? ", being played" : ""}`,
  },
  h("h3", {}, `Round ${pair.round}`,
    pair.revealed ? h("span", { class: "badge" }, "revealed") : current ? h("span", { class: "badge now" }, "now") : null),
  h("div", { class: "targets" },
    targetBox(view, pair, pair.number, ui, low, high, outcomeOf("number")),
    targetBox(view, pair, pair.suit, ui, low, high, outcomeOf("suit"))));
}

function handRow(view, seat, ui) {
  const s = view.seats[seat];
  if (s.hand) {
    const mine = ui.interactive && view.viewer === seat;
    return h("div", { class: "hand", role: "group", "aria-label": mine ? "Your hand" : `${seatName(view, seat)}'s hand` },
      s.hand.map((c) => {
        if (!mine) return card(c);
        const targets = ui.plays[c] || [];
        const keeping = ui.keeping;
        const pressed = keeping ? ui.keep.has(c) : ui.selected === c;
        return card(c, {
          as: "button",
          "aria-pressed": pressed ? "true" : "false",
          "data-legal-targets": targets.join(" "),
          disabled: !keeping && !targets.length ? true : null,
          onclick: () => ui.onCard(c),
        });
      }),
      s.hand.length ? null : h("span", { class: "muted" }, "no cards"));
  }
  return h("div", { class: "hand backs", role: "img", "aria-label": `${plural(s.hand_count, "card")} in hand` },
    Array.from({ length: s.hand_count }, () => h("span", { class: "card back small", "aria-hidden": "true" })),
    h("span", { class: "count", "aria-hidden": "true" }, plural(s.hand_count, "card")));
}

function seatPanel(view, seat, ui, pos) {
  const s = view.seats[seat];
  const full = scale(view.ruleset);
  const near = Math.max(0, full - s.tokens_to_qualify);
  // A bot plays from the server, never over the match's socket: it is always here.
  const online = ui.presence ? ui.presence.players[seat] || isBot(s.player) : null;
  const playing = view.phase === "playing";
  const ended = view.phase === "ended";
  const badge = (on, text, cls = "") => (on ? h("span", { class: `badge ${cls}` }, text) : null);
  const r = view.result;
  const badges = [
    badge(!ended && view.dealer === seat, "dealer"),
    badge(view.to_move === seat && playing, "to move", "now"),
    badge(s.passed && playing, "passed"),
    badge(s.must_keep, "choosing"),
    badge(s.kept_count != null && !ended, `kept ${s.kept_count}`),
    badge(r && !r.annulled && r.winner === seat, "winner", "win"),
    online === null ? null : h("span", { class: `dot${online ? " on" : ""}`, title: online ? "connected" : "away",
      "aria-label": online ? "connected" : "away", role: "img" }),
  ];
  const standing = ended
    ? h("span", { class: "ttq", "data-ttq": s.tokens_to_qualify },
      !r || r.annulled ? "annulled" : r.winner === null ? "draw" : r.winner === seat ? "won the match" : "lost the match")
    : h("span", { class: "ttq", "data-ttq": s.tokens_to_qualify },
      s.qualifies ? "holds a winning set" : `${plural(s.tokens_to_qualify, "token")} from winning`);
  const who = view.viewer === seat ? h("b", { class: "who" }, "You") : h("b", { class: "who" }, playerLink(s.player));
  return h("section", { class: `seat ${pos}${view.to_move === seat && playing ? " moving" : ""}`, "data-seat": seat,
    "aria-label": `${seatName(view, seat)}, seat ${seat}` },
  h("header", {}, who, ...badges),
  h("div", { class: "tokens", role: "group", "aria-label": "tokens" },
    KINDS.map((k) => token(k, s.tokens[k]))),
  h("div", { class: "progress" },
    ended ? null : h("meter", { min: 0, max: full, value: near, "aria-label": "closeness to winning" }),
    standing),
  handRow(view, seat, ui));
}

/**
 * The whole table. `ui`: {interactive, selected, plays, keeping, keep (Set),
 * onCard(code), onTarget(round, target), presence, reveals {"h:r": reveal}, fresh}.
 */
export function renderTable(view, ui = {}) {
  ui = { plays: {}, keep: new Set(), ...ui };
  const low = bottomSeat(view);
  const high = 1 - low;
  return h("div", { class: "table", "data-phase": view.phase, "data-version": view.version,
    "data-hand": view.hand, "data-round": view.round, "data-to-move": view.to_move ?? "" },
  seatPanel(view, high, ui, "far"),
  h("div", { class: "tatami" },
    view.tatami.length ? view.tatami.map((p) => pairBox(view, p, ui, low, high))
      : h("p", { class: "muted" }, "No tea cards yet.")),
  seatPanel(view, low, ui, "near"));
}
