// The end of a match told in the game's words (RULES §6, §9): which tokens made
// a winning set, or how the token comparison went, and each player's rating
// change. From GET /api/matches/{id}/outcome (public facts only).
import { api } from "./api.js";
import { h } from "./dom.js";
import { KINDS, token } from "./cards.js";
import { nameOf, playerLink } from "./names.js";

const cap = (s) => s.charAt(0).toUpperCase() + s.slice(1);
const signed = (x) => `${x >= 0 ? "+" : "−"}${Math.abs(Math.round(x))}`;

function who(o, seat, viewer) {
  if (viewer === seat) return { name: "you", has: "have", holds: "hold", wins: "win" };
  const name = o.seats[seat].name || nameOf(o.seats[seat].player);
  return { name, has: "has", holds: "holds", wins: "wins" };
}

export function setWords(set) {
  if (set.way === "suit") return `${set.count} ${set.kind} tokens (${set.needed} of one suit win)`;
  if (set.way === "chasen") return `${set.count} chasen (${set.needed} chasen win)`;
  return "one token of each of the five kinds";
}

function comparisonWords(o, viewer) {
  const [a, b] = [who(o, 0, viewer).name, who(o, 1, viewer).name];
  const lines = o.comparison.map((s) => `${s.kind} ${s.counts[0]}–${s.counts[1]}`);
  const last = o.comparison.at(-1);
  if (o.winner === null || !last) return `the token comparison (${a} first): ${lines.join(", ")}: all four suits equal`;
  const w = who(o, o.winner, viewer);
  return `the token comparison (${a}–${b}: ${lines.join(", ")}): ${w.name} ${w.has} more ${last.kind}`;
}

/** The sentences that explain the result. */
export function explainOutcome(o, viewer) {
  if (o.decided_by === "annulled") return ["An administrator annulled the match: it has no result and changes no rating."];
  const w = o.winner === null ? null : who(o, o.winner, viewer);
  const l = o.winner === null ? null : who(o, 1 - o.winner, viewer);
  const sets = (seat) => o.seats[seat].winning_sets.map(setWords).join(" and ");
  switch (o.decided_by) {
    case "winning_set":
      return [`${cap(w.name)} ${w.wins} with a winning set: ${sets(o.winner)}.`,
        `${cap(l.name)} had no winning set yet.`];
    case "comparison":
      return [`Both players held a winning set after the same reveal (${who(o, 0, viewer).name}: ${sets(0)}; ${who(o, 1, viewer).name}: ${sets(1)}).`,
        `So ${comparisonWords(o, viewer)}, and ${w.name} ${w.wins}.`];
    case "hand_limit":
      return [`Nobody held a winning set when the last hand (${o.hands} of ${o.max_hands}) ended.`,
        `So ${comparisonWords(o, viewer)}, and ${w.name} ${w.wins}.`];
    case "draw":
      return [`Nobody held a winning set when the last hand (${o.hands} of ${o.max_hands}) ended,`,
        `and ${comparisonWords(o, viewer)}: the match is a draw.`];
    case "resigned":
      return [`${cap(l.name)} resigned: ${w.name} ${w.wins}.`];
    case "timeout":
      return [`${cap(l.name)} ran out of time: ${w.name} ${w.wins}.`];
    case "aborted":
      return ["The match was aborted before it really began (a seat made no first move in time): it is unrated."];
    default:
      return [];
  }
}

function ratingRow(o, seat, viewer) {
  const s = o.seats[seat];
  const name = viewer === seat ? "You" : playerLink(s.player, s.name || nameOf(s.player));
  let cell;
  if (!o.rated) cell = h("span", { class: "muted" }, "unrated");
  else if (s.rating_after == null) cell = h("span", { class: "muted" }, "updating…");
  else {
    const change = s.rating_after - s.rating_before;
    cell = [`${Math.round(s.rating_before)} → ${Math.round(s.rating_after)} `,
      h("b", { class: change >= 0 ? "up" : "down", "data-change": change.toFixed(1) }, signed(change))];
  }
  return h("tr", { "data-seat": seat },
    h("th", { scope: "row" }, name),
    h("td", { class: "chips" }, KINDS.map((k) => token(k, s.tokens[k] || 0))),
    h("td", { class: "rating" }, cell));
}

/** The end panel. `headline`: the element tests and screen readers read first (#result). */
export function endPanel(o, view) {
  const viewer = typeof view.viewer === "number" ? view.viewer : null;
  const r = view.result;
  const title = r.annulled ? "Match annulled"
    : r.winner === null ? "Draw"
      : viewer === r.winner ? "You win!" : viewer !== null ? "You lose" : `${nameOf(view.seats[r.winner].player)} wins`;
  return h("section", { class: `panel end${viewer !== null && r.winner === viewer ? " won" : ""}`, id: "end", "aria-labelledby": "result" },
    h("h2", { id: "result", class: "result", "data-winner": r.winner ?? "none" }, title),
    o ? explainOutcome(o, viewer).map((t) => h("p", { class: "why" }, t)) : h("p", { class: "muted" }, "Reading how it was decided…"),
    o ? h("table", { class: "list ratings" },
      h("caption", { class: "sr" }, "Final tokens and rating changes"),
      h("thead", {}, h("tr", {}, ["Player", "Tokens", "Rating"].map((t) => h("th", { scope: "col" }, t)))),
      h("tbody", {}, [0, 1].map((seat) => ratingRow(o, seat, viewer)))) : null);
}

/** Fetch the outcome; while the workers have not applied the ratings, ask again (bounded). */
export async function followOutcome(matchId, onOutcome, { tries = 8, every = 1500 } = {}) {
  for (let i = 0; i < tries; i += 1) {
    let o = null;
    try { o = await api(`/api/matches/${encodeURIComponent(matchId)}/outcome`, { anonymous: true }); } catch { o = null; }
    if (o) onOutcome(o);
    if (o && (!o.rated || o.ratings_applied)) return;
    await new Promise((r) => setTimeout(r, every));
  }
}
