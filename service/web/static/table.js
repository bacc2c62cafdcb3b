// The table, drawn from one MatchView: three tatami pairs, both seats, tokens.
// Shared by the play, watch and replay pages; it shows only what the view holds.
import { h, plural } from "./dom.js";
import { back, card, cardName, KINDS, rankOf, suitOf, token } from "./cards.js";
import { nameOf } from "./names.js";

const PLACE = { 1: "left", 2: "middle", 3: "right" };

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

export function status(view) {
  if (view.phase === "new") return "Waiting for the first deal.";
  if (view.phase === "ended") return "The match is over.";
  const where = `Hand ${view.hand}`;
  if (view.phase === "keeping") return `${where}: choosing which cards to keep.`;
  const mover = view.to_move === null ? "" : ` · ${seatName(view, view.to_move)} to move`;
  return `${where} · round ${view.round} (${PLACE[view.round] || ""} pair)${mover}`;
}

export function seatName(view, seat) {
  if (view.viewer === seat) return "You";
  return nameOf(view.seats[seat].player);
}

function slot(target, seat, pos) {
  const c = target.cards[seat];
  const el = c ? card(c, { small: true }) : target.occupied[seat] ? back("face-down card", true) : null;
  return h("div", { class: `slot ${pos}`, "data-seat": seat, "data-filled": target.occupied[seat] ? "1" : "0" },
    el || h("span", { class: "empty", "aria-hidden": "true" }));
}

function targetBox(view, pair, target, ui, low, high) {
  const current = view.phase === "playing" && pair.round === view.round && !pair.revealed;
  const legal = ui.selected && (ui.plays[ui.selected] || []).includes(target.target) && current;
  const label = `Round ${pair.round} ${target.target} target, tea card ${target.tea_card}, ${wants(target)}`;
  return h(legal ? "button" : "div", {
    class: `target t-${target.target}${legal ? " legal" : ""}`,
    type: legal ? "button" : null,
    "aria-label": legal ? `Play ${ui.selected} here: ${label}` : null,
    role: legal ? null : "group",
    "data-round": pair.round,
    "data-target": target.target,
    "data-legal": legal ? "1" : "0",
    onclick: legal ? () => ui.onTarget(pair.round, target.target) : null,
  },
  slot(target, high, "far"),
  h("div", { class: "tea" },
    card(target.tea_card, { "aria-label": `tea card ${cardName(target.tea_card)}; ${wants(target)}` }),
    h("span", { class: "wants" }, h("b", {}, target.target), " ", wants(target).replace("wants ", "→ "))),
  slot(target, low, "near"));
}

function pairBox(view, pair, ui, low, high) {
  const current = view.phase === "playing" && pair.round === view.round;
  return h("section", {
    class: `pair${current ? " current" : ""}${pair.revealed ? " revealed" : ""}`,
    "data-round": pair.round,
    "aria-label": `Round ${pair.round}, ${PLACE[pair.round]} pair${pair.revealed ? ", revealed" : ""}${current ? ", being played" : ""}`,
  },
  h("h3", {}, `Round ${pair.round}`, h("small", {}, ` ${PLACE[pair.round]}`),
    pair.revealed ? h("span", { class: "badge" }, "revealed") : current ? h("span", { class: "badge now" }, "now") : null),
  h("div", { class: "targets" },
    targetBox(view, pair, pair.number, ui, low, high),
    targetBox(view, pair, pair.suit, ui, low, high)));
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
  return h("div", { class: "hand", role: "img", "aria-label": `${plural(s.hand_count, "card")} in hand` },
    Array.from({ length: s.hand_count }, () => h("span", { class: "card back small", "aria-hidden": "true" })));
}

function seatPanel(view, seat, ui, pos) {
  const s = view.seats[seat];
  const full = scale(view.ruleset);
  const near = Math.max(0, full - s.tokens_to_qualify);
  const online = ui.presence ? ui.presence.players[seat] : null;
  const playing = view.phase === "playing";
  const badge = (on, text, cls = "") => (on ? h("span", { class: `badge ${cls}` }, text) : null);
  const badges = [
    badge(view.dealer === seat, "dealer"),
    badge(view.to_move === seat && playing, "to move", "now"),
    badge(s.passed && playing, "passed"),
    badge(s.must_keep, "choosing"),
    badge(s.kept_count != null && view.phase !== "ended", `kept ${s.kept_count}`),
    badge(view.result && view.result.winner === seat, "winner", "win"),
    online === null ? null : h("span", { class: `dot${online ? " on" : ""}`, title: online ? "connected" : "away",
      "aria-label": online ? "connected" : "away", role: "img" }),
  ];
  return h("section", { class: `seat ${pos}${view.to_move === seat ? " moving" : ""}`, "data-seat": seat,
    "aria-label": `${seatName(view, seat)}, seat ${seat}` },
  h("header", {}, h("b", { class: "who" }, seatName(view, seat)), ...badges),
  h("div", { class: "tokens", role: "group", "aria-label": "tokens" },
    KINDS.map((k) => token(k, s.tokens[k]))),
  h("div", { class: "progress" },
    h("meter", { min: 0, max: full, value: near, "aria-label": "closeness to winning" }),
    h("span", { class: "ttq", "data-ttq": s.tokens_to_qualify },
      s.qualifies ? "holds a winning set" : `${plural(s.tokens_to_qualify, "token")} from winning`)),
  handRow(view, seat, ui));
}

/**
 * The whole table. `ui`: {interactive, selected, plays, keeping, keep (Set),
 * onCard(code), onTarget(round, target), presence}.
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
