// A tiny element builder: h("button", {class: "x", onclick: f}, "text", child).
// Attributes starting with "on" become listeners; false/null attributes are left out.
export function h(tag, attrs = {}, ...children) {
  const svg = tag.startsWith("svg:");
  const el = svg
    ? document.createElementNS("http://www.w3.org/2000/svg", tag.slice(4))
    : document.createElement(tag);
  for (const [key, value] of Object.entries(attrs || {})) {
    if (value === false || value === null || value === undefined) continue;
    if (key.startsWith("on") && typeof value === "function") el.addEventListener(key.slice(2), value);
    else if (key === "dataset") Object.assign(el.dataset, value);
    else el.setAttribute(key, value === true ? "" : String(value));
  }
  for (const child of children.flat(Infinity)) {
    if (child == null || child === false) continue;
    el.append(child instanceof Node ? child : document.createTextNode(String(child)));
  }
  return el;
}

export const icon = (name, label) =>
  h("svg:svg", { class: "ico", "aria-hidden": label ? null : "true", role: label ? "img" : null,
    "aria-label": label || null },
    h("svg:use", { href: `#i-${name}` }));

/** Tell a screen reader, in a live region that outlives redraws; news within 1.5 s adds up. */
let saidAt = 0;
export function announce(text) {
  const el = document.getElementById("announce");
  if (el) el.textContent = Date.now() - saidAt < 1500 ? `${el.textContent} ${text}` : text;
  saidAt = Date.now();
}

let toastTimer = 0;
/** Show a message the screen reader announces (role=alert); errors stay longer. */
export function toast(text, kind = "info") {
  const box = document.getElementById("toast");
  box.textContent = text;
  box.className = `toast ${kind}`;
  box.hidden = false;
  clearTimeout(toastTimer);
  toastTimer = setTimeout(() => { box.hidden = true; }, kind === "error" ? 8000 : 3500);
}

/** "1 card", "3 cards". */
export const plural = (n, word) => `${n} ${word}${n === 1 ? "" : "s"}`;

export const $ = (sel, root = document) => root.querySelector(sel);
export const $$ = (sel, root = document) => [...root.querySelectorAll(sel)];

/** replaceChildren, leaving out null/false (it would print "null"). */
export const fill = (el, ...kids) => el.replaceChildren(...kids.flat(Infinity).filter((k) => k != null && k !== false));
