// Tokens fly from the target that gave them to the seat that wins them, on the
// table itself, once per reveal. Nothing is animated with reduced motion.
import { h, icon } from "./dom.js";
import { KIND_SYMBOL } from "./cards.js";

const still = () => window.matchMedia && matchMedia("(prefers-reduced-motion: reduce)").matches;

/** reveal: the viewer's round_revealed event; root: where the table is drawn. */
export function flyTokens(root, reveal) {
  if (still() || !reveal) return;
  let delay = 500;   // after the cards have turned
  for (const o of reveal.outcomes) {
    const from = root.querySelector(`.pair[data-round="${reveal.round}"] .target[data-target="${o.target}"] .tea`);
    for (const a of o.given) {
      const to = root.querySelector(`.seat[data-seat="${a.seat}"] .tok[data-kind="${a.kind}"]`);
      if (!from || !to) continue;
      const start = from.getBoundingClientRect();
      const end = to.getBoundingClientRect();
      const chip = h("span", { class: `tok flying k-${a.kind}`, "aria-hidden": "true" }, icon(KIND_SYMBOL[a.kind]), h("b", {}, "+1"));
      chip.style.left = `${start.left + start.width / 2 - 18}px`;
      chip.style.top = `${start.top + start.height / 2 - 12}px`;
      document.body.append(chip);
      const dx = end.left + end.width / 2 - (start.left + start.width / 2);
      const dy = end.top + end.height / 2 - (start.top + start.height / 2);
      const run = chip.animate([
        { transform: "translate(0, 0) scale(1.3)", opacity: 0 },
        { transform: "translate(0, 0) scale(1.3)", opacity: 1, offset: 0.15 },
        { transform: `translate(${dx}px, ${dy}px) scale(1)`, opacity: 1 },
      ], { duration: 900, delay, easing: "cubic-bezier(.5,0,.3,1)", fill: "both" });
      const done = () => { chip.remove(); to.animate([{ transform: "scale(1.35)" }, { transform: "none" }], { duration: 300 }); };
      run.onfinish = done;
      run.oncancel = () => chip.remove();
      delay += 250;
    }
  }
}
