// The admins' fair-play page, /admin/flags (docs/fairplay.md): open flags by
// weight, heaviest first, each with its numbers, its matches (links to their
// audits) and a decision form: dismiss, void its matches, or close an account,
// always with a written reason. Everything comes from and goes to the JSON API.
import { api, refreshMe } from "./api.js";
import { notAdmin } from "./admin_guard.js";
import { h } from "./dom.js";

const app = document.getElementById("app");

function numbers(flag) {
  return h("dl", { class: "numbers" }, ...Object.entries(flag.numbers).flatMap(([k, v]) => [h("dt", {}, k), h("dd", {}, String(v))]));
}

function decisionForm(flag, names, redraw) {
  const reason = h("textarea", { name: "reason", required: true, maxlength: "500", rows: "2", "aria-label": "Reason" });
  const action = h("select", { name: "action", "aria-label": "Decision" },
    h("option", { value: "dismiss" }, "Dismiss"),
    h("option", { value: "void" }, "Void its matches"),
    h("option", { value: "close" }, `Close ${names[flag.players[0]] || flag.players[0]} for fair play`));
  const said = h("p", { role: "status" });
  const form = h("form", { class: "decision" },
    h("label", {}, "Decision ", action), h("label", {}, "Reason ", reason),
    h("button", { type: "submit" }, "Decide"), said);
  form.addEventListener("submit", async (e) => {
    e.preventDefault();
    try {
      await api(`/api/admin/flags/${flag.flag_id}/decision`, { method: "POST", body: { action: action.value, reason: reason.value } });
      await redraw();
    } catch (err) {
      said.textContent = err.detail || String(err);
    }
  });
  return form;
}

async function draw() {
  const refused = notAdmin("Fair-play flags");
  if (refused) { app.replaceChildren(refused); return; }
  const flags = await api("/api/admin/flags");
  const list = flags.map(({ flag, names }) => h("section", { class: "panel flag", id: flag.flag_id },
    h("h2", {}, `${flag.signal}: ${flag.players.map((p) => names[p] || p).join(" vs ")}`),
    h("p", { class: "muted" }, `weight ${flag.weight.toFixed(2)} · ${flag.matches.length} matches`),
    numbers(flag),
    h("details", {}, h("summary", {}, "Matches"),
      h("ul", {}, ...flag.matches.map((m, i) => h("li", {}, h("a", { href: `/admin/matches/${m}` }, `Audit of match ${i + 1}`), " · ",
        h("a", { href: `/replay/${m}` }, `replay ${i + 1}`))))),
    decisionForm(flag, names, draw)));
  app.replaceChildren(h("h1", {}, "Fair-play flags"),
    list.length ? h("div", {}, ...list) : h("p", {}, "No open flags."));
}

refreshMe().then(draw).catch((err) => { app.replaceChildren(h("p", { role: "alert" }, err.detail || String(err))); });
