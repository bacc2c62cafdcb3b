// Cards and tokens: colour AND code AND symbol, never colour alone.
import { h, icon, plural } from "./dom.js";

export const SUITS = {
  M: { suit: "matcha", symbol: "leaf" },
  C: { suit: "chawan", symbol: "bowl" },
  W: { suit: "water", symbol: "drop" },
  S: { suit: "chashaku", symbol: "spoon" },
};
export const KINDS = ["matcha", "chawan", "water", "chashaku", "chasen"];
export const KIND_SYMBOL = { matcha: "leaf", chawan: "bowl", water: "drop", chashaku: "spoon", chasen: "whisk" };

export const suitOf = (code) => SUITS[code[0]]?.suit ?? null;
export const rankOf = (code) => (code[0] === "Z" ? null : Number(code.slice(1)));

/** "W2, water 2" / "Z1, zero card" — the accessible name of a card. */
export function cardName(code) {
  const meta = SUITS[code[0]];
  return meta ? `${code}, ${meta.suit} ${code.slice(1)}` : `${code}, zero card`;
}

/** A face-up card. `as` = "button" for a card you can pick. */
export function card(code, { as = "span", small = false, ...attrs } = {}) {
  const meta = SUITS[code[0]];
  const cls = `card ${meta ? `s-${code[0]}` : "s-Z"}${small ? " small" : ""}`;
  const extra = as === "button" ? { type: "button" } : { role: "img" };
  return h(as, { class: cls, "aria-label": cardName(code), "data-card": code, ...extra, ...attrs },
    icon(meta ? meta.symbol : "zero"),
    h("b", { "aria-hidden": "true" }, code));
}

/** A face-down card: its identity is not in the page at all. */
export function back(label = "face-down card", small = false) {
  return h("span", { class: `card back${small ? " small" : ""}`, role: "img", "aria-label": label });
}

export function token(kind, count) {
  const label = `${kind}: ${plural(count, "token")}`;
  return h("span", { class: `tok k-${kind}${count ? "" : " none"}`, role: "img", "aria-label": label,
    title: label, "data-kind": kind, "data-count": count },
    icon(KIND_SYMBOL[kind]), h("b", { "aria-hidden": "true" }, count));
}
