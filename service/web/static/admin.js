// The administrators' dispute queue: disputes waiting for a decision, with the
// match, the players and the reason, each leading to its audit and the decision.
import { api } from "./api.js";
import { fill, h } from "./dom.js";
import { notAdmin } from "./admin_guard.js";
import { playerLink } from "./names.js";

const when = (iso) => new Date(iso).toLocaleString(undefined, { dateStyle: "medium", timeStyle: "short" });

function queueTable(list, decided) {
  if (!list.length) return h("p", { class: "muted", id: decided ? "decided" : "queue" }, decided ? "No decided dispute yet." : "No dispute is waiting for a decision.");
  return h("table", { class: "list", id: decided ? "decided" : "queue" },
    h("thead", {}, h("tr", {}, ["Match", "Filed by", "Reason", "Filed", decided ? "Decision" : ""].map((t) => h("th", { scope: "col" }, t)))),
    h("tbody", {}, list.map((d) => h("tr", { "data-dispute": d.dispute_id, "data-match": d.match_id },
      h("td", {}, playerLink(d.players[0], d.player_names[0] || "?"), " vs ", playerLink(d.players[1], d.player_names[1] || "?"),
        h("br"), h("small", { class: "muted" }, d.ladder_name || "no ladder")),
      h("td", {}, playerLink(d.filer, d.filer_name || "?")),
      h("td", { class: "reason" }, d.reason),
      h("td", {}, when(d.filed_at)),
      h("td", {}, decided
        ? [h("b", { class: d.state }, d.state), ` by ${d.decided_by_name || "?"}: ${d.decision_reason || ""}`]
        : h("a", { class: "btn primary small", href: `/admin/matches/${encodeURIComponent(d.match_id)}#dispute-${d.dispute_id}` }, "Audit and decide"))))));
}

export async function adminPage(root) {
  const refused = notAdmin("Disputes");
  if (refused) { fill(root, refused); return; }
  let open = [];
  let done = [];
  try {
    [open, done] = await Promise.all([api("/api/admin/disputes?state=filed"), api("/api/admin/disputes?state=all&limit=50")]);
  } catch (e) {
    fill(root, h("h1", {}, "Disputes"), h("p", { class: "panel", id: "message" }, e.detail || String(e)));
    return;
  }
  const lookup = h("form", { class: "row", onsubmit: (e) => {
    e.preventDefault();
    const id = e.target.elements["audit-id"].value.trim();
    if (id) location.assign(`/admin/matches/${encodeURIComponent(id)}`);
  } }, h("label", { for: "audit-id" }, "Audit any match by id"), h("input", { id: "audit-id", autocomplete: "off" }),
  h("button", { class: "btn", type: "submit" }, "Audit"));
  fill(root,
    h("h1", {}, "Disputes ", h("small", { class: "muted" }, `${open.length} waiting`)),
    h("section", { class: "panel" }, h("h2", {}, "Waiting for a decision"), queueTable(open, false)),
    h("section", { class: "panel" }, h("h2", {}, "Decided"), queueTable(done.filter((d) => d.state !== "filed"), true)),
    h("section", { class: "panel" }, lookup));
}
