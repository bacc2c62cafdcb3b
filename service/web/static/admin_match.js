// One match's audit, for people: the verdict, every check with its first problem,
// the timing, the timeline of the whole (omniscient) log with names, and the
// disputes with the uphold / reject forms. Administrators only.
import { api, ApiError } from "./api.js";
import { fill, h, toast } from "./dom.js";
import { notAdmin } from "./admin_guard.js";
import { describe } from "./match.js";
import { learnIds, nameOf, playerLink } from "./names.js";

const enc = encodeURIComponent;
const time = (iso) => new Date(iso).toLocaleTimeString(undefined, { hour: "2-digit", minute: "2-digit", second: "2-digit", hour12: false });
const when = (iso) => new Date(iso).toLocaleString(undefined, { dateStyle: "medium", timeStyle: "medium" });
const STATUS = { consistent: "✓ consistent", inconsistent: "✗ inconsistent", skipped: "– skipped", pending: "… pending" };

function finding(f) {
  if (!f) return h("p", { class: "muted" }, "No problem found.");
  const where = f.version == null ? "the match as a whole" : `event ${f.version}${f.event_type ? ` (${f.event_type.replace(/_/g, " ")})` : ""}`;
  return h("div", { class: "finding" },
    h("p", {}, h("b", {}, "First problem, at ", where, ": "), f.problem),
    f.path ? h("p", {}, "Where: ", h("code", {}, f.path)) : null,
    f.logged !== undefined || f.expected !== undefined ? h("dl", { class: "facts" },
      h("dt", {}, "In the log"), h("dd", {}, h("code", {}, JSON.stringify(f.logged))),
      h("dt", {}, "Expected"), h("dd", {}, h("code", {}, JSON.stringify(f.expected)))) : null);
}

function check(title, c, first, extra) {
  return h("section", { class: `check ${c.status}`, "data-check": title },
    h("h3", {}, `${title}: `, h("span", { class: "state" }, STATUS[c.status] || c.status)),
    extra ? h("p", { class: "muted" }, extra) : null,
    c.note ? h("p", { class: "muted" }, c.note) : null,
    c.status === "inconsistent" ? finding(first) : null);
}

function decisionForm(d, onDone) {
  const reason = h("textarea", { id: `reason-${d.dispute_id}`, required: true, rows: 3, maxlength: 2000 });
  const decide = async (upheld) => {
    if (!reason.value.trim()) { reason.reportValidity(); return; }
    try {
      await api(`/api/admin/disputes/${enc(d.dispute_id)}/decision`, { method: "POST", body: { upheld, reason: reason.value.trim() } });
      toast(upheld ? "Upheld: the match is annulled and its ladder recomputed." : "Rejected: the result stands.");
      onDone();
    } catch (e) { toast(e instanceof ApiError ? e.detail : String(e), "error"); }
  };
  return h("form", { class: "decide", onsubmit: (e) => e.preventDefault() },
    h("label", { for: reason.id }, "Your reason (shown to the players and in the audit trail)"), reason,
    h("div", { class: "row" },
      h("button", { class: "btn danger", type: "button", "data-action": "uphold", onclick: () => decide(true) }, "Uphold: annul the match"),
      h("button", { class: "btn", type: "button", "data-action": "reject", onclick: () => decide(false) }, "Reject: the result stands")));
}

function disputeCard(d, onDone) {
  return h("article", { class: `panel dispute ${d.state}`, id: `dispute-${d.dispute_id}`, "data-dispute": d.dispute_id },
    h("h3", {}, `Dispute by ${nameOf(d.player)}`, h("span", { class: "badge" }, d.state)),
    h("p", {}, h("b", {}, "Reason: "), d.reason),
    h("p", { class: "muted" }, `Filed ${when(d.filed_at)}, after event ${d.filed_version}.`),
    d.state === "filed" ? decisionForm(d, onDone)
      : h("p", {}, h("b", {}, `${d.state === "upheld" ? "Upheld" : "Rejected"} by ${nameOf(d.decided_by)}: `), d.decision_reason || ""));
}

export async function adminMatchPage(root, matchId) {
  const refused = notAdmin("Audit");
  if (refused) { fill(root, refused); return; }
  let report;
  try {
    report = await api(`/api/admin/matches/${enc(matchId)}/audit`);
  } catch (e) {
    fill(root, h("h1", {}, "Audit"), h("p", { class: "panel", id: "message" }, e.detail || String(e)));
    return;
  }
  const actors = report.events.map((e) => e.actor).filter((a) => a && a !== "system");
  await learnIds([...report.players, ...actors, ...report.disputes.flatMap((d) => [d.player, d.decided_by])]);
  const view = { viewer: "omniscient", seats: report.players.map((p) => ({ player: p })) };
  const seconds = new Map(report.timing.moves.map((m) => [m.version, m.seconds]));
  const gaps = new Map(report.timing.long_gaps.map((g) => [g.version, g.seconds]));
  const v = report.verdict;
  fill(root,
    h("div", { class: "match-head" },
      h("h1", {}, "Audit: ", playerLink(report.players[0]), h("span", { class: "vs" }, " vs "), playerLink(report.players[1])),
      h("span", { class: "badge" }, report.status),
      report.status !== "live" ? h("a", { class: "btn small", href: `/replay/${enc(matchId)}` }, "Replay") : null),
    h("p", { class: `panel verdict ${v.consistent ? "ok" : "bad"}`, id: "verdict", role: "status" },
      h("b", {}, v.consistent ? "Consistent: " : "Inconsistent: "),
      v.consistent ? v.line.replace(/^consistent: /, "") : v.reasons.join("; ")),
    h("section", { class: "panel", id: "checks" }, h("h2", {}, "Checks"),
      // Every check of the report, in its order, with its first problem: the list the
      // verdict is made from (service/audit/verdict.py), as `matcha audit` prints it.
      report.checks.map((c) => check(c.title, c, c.first_problem, c.summary))),
    h("section", { class: "panel", id: "disputes" }, h("h2", {}, "Disputes"),
      report.disputes.length ? report.disputes.map((d) => disputeCard(d, () => adminMatchPage(root, matchId)))
        : h("p", { class: "muted" }, "Nobody disputed this match.")),
    h("section", { class: "panel", id: "timing" }, h("h2", {}, "Time taken"),
      h("table", { class: "list" }, h("thead", {}, h("tr", {}, ["Player", "Moves", "Total", "Mean", "Longest"].map((t) => h("th", { scope: "col" }, t)))),
        h("tbody", {}, report.timing.seats.map((s) => h("tr", {},
          h("td", {}, playerLink(s.player)), h("td", { class: "num" }, s.moves), h("td", { class: "num" }, `${s.total_s.toFixed(1)} s`),
          h("td", { class: "num" }, `${s.mean_s.toFixed(1)} s`), h("td", { class: "num" }, `${s.max_s.toFixed(1)} s`))))),
      report.timing.long_gaps.length ? h("p", {}, `${report.timing.long_gaps.length} silence(s) longer than ${report.timing.gap_threshold_s} s (marked in the timeline).`) : null),
    h("section", { class: "panel", id: "timeline" }, h("h2", {}, `Timeline (${report.events.length} events, everything shown: you are an administrator)`),
      h("ol", { class: "timeline", tabindex: 0, "aria-label": "Every event of the match" }, report.events.map((e) => h("li", { "data-version": e.version, class: `${e.hash_ok ? "" : "bad"}${gaps.has(e.version) ? " gap" : ""}` },
        h("time", { datetime: e.recorded_at }, time(e.recorded_at)),
        h("span", { class: "actor" }, !e.actor || e.actor === "system" ? "service" : nameOf(e.actor)),
        h("span", { class: "what" }, `${e.version}. `, describe({ type: e.type, ...e.data }, view),
          seconds.has(e.version) ? h("small", { class: "muted" }, ` (${seconds.get(e.version).toFixed(1)} s)`) : null,
          gaps.has(e.version) ? h("small", { class: "gap-note" }, ` after a ${gaps.get(e.version).toFixed(0)} s silence`) : null,
          e.hash_ok ? null : h("b", { class: "bad" }, " hash does not match")))))));
}
