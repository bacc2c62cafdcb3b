// The spectators' win-probability bar: each seat's chance to win, as judged from
// what a spectator may see (GET /api/matches/{id}/win-probability, or the live
// stream's "odds" frames). Never shown to a player of a live match.
import { h } from "./dom.js";

const pct = (x) => `${Math.round(100 * x)}%`;

/** odds: {p: [p0, p1], version}, or {unavailable: why} when the service has none
 * (the estimate failed or was never made); names: [seat 0's name, seat 1's name]. */
export function oddsBar(odds, names) {
  if (odds && odds.unavailable) {
    return h("div", { class: "odds unavailable", id: "odds", "data-unavailable": odds.unavailable,
      "aria-label": "Win probability: none for this moment" },
    h("small", { class: "muted" }, "No odds for this moment: the service could not estimate them."));
  }
  if (!odds || !odds.p) {
    return h("div", { class: "odds pending", id: "odds", "aria-label": "Win probability: not estimated yet" },
      h("small", { class: "muted" }, "Estimating the odds…"));
  }
  const [p0, p1] = odds.p;
  const draw = Math.max(0, 1 - p0 - p1);
  const label = `Win probability: ${names[0]} ${pct(p0)}, ${names[1]} ${pct(p1)}${draw >= 0.005 ? `, draw ${pct(draw)}` : ""}`;
  return h("div", { class: "odds", id: "odds", role: "img", "aria-label": label, "data-version": odds.version,
    title: "From what a spectator may see only: the hidden cards are drawn at random many times." },
  h("span", { class: "odds-name" }, `${names[0]} ${pct(p0)}`),
  h("span", { class: "odds-track" },
    h("span", { class: "odds-seat0", style: `width:${(100 * p0).toFixed(1)}%` }),
    draw >= 0.005 ? h("span", { class: "odds-draw", style: `width:${(100 * draw).toFixed(1)}%` }) : null,
    h("span", { class: "odds-seat1", style: `width:${(100 * p1).toFixed(1)}%` })),
  h("span", { class: "odds-name" }, `${pct(p1)} ${names[1]}`));
}
