// A ladder's seasons (/ladders/{id}/seasons): the running season's standings so far,
// each ended season's frozen standings, a player's ratings within a season, and,
// for the ladder's organiser, scheduling a season and ending one early.
import { api, ApiError, auth } from "./api.js";
import { fill, h, toast } from "./dom.js";
import { timeControlText } from "./clocks.js";

const enc = encodeURIComponent;
const fail = (e) => toast(e instanceof ApiError ? e.detail : String(e), "error");
const when = (iso) => (iso ? new Date(iso).toLocaleString() : "—");
const PHASE = { scheduled: "scheduled", running: "running now", ended: "ended (freezing)", frozen: "final" };

function standingsTable(ladderId, season, rows, names, glicko) {
  if (!rows.length) return h("p", { class: "muted" }, "No rated match in this season yet.");
  const head = ["#", "Player", "Rating", ...(glicko ? ["± 2·RD"] : []), "Games", "W–D–L"];
  return h("table", { class: "list season-standings", "data-season": season.season_id },
    h("thead", {}, h("tr", {}, head.map((t) => h("th", { scope: "col" }, t)))),
    h("tbody", {}, rows.map((r) => h("tr", { "data-player": r.player_id },
      h("td", {}, r.rank),
      h("td", {}, h("button", { class: "btn link", type: "button", "data-action": "season-history",
        onclick: () => showHistory(ladderId, season, r.player_id, names) }, names[r.player_id] || r.player_id)),
      h("td", { class: "rating" }, Math.round(r.rating)),
      glicko ? h("td", {}, r.rd == null ? "" : `± ${Math.round(2 * r.rd)}`) : null,
      h("td", {}, r.games),
      h("td", {}, `${r.wins}–${r.draws}–${r.losses}`)))));
}

async function showHistory(ladderId, season, playerId, names) {
  const box = document.getElementById(`history-${season.season_id}`);
  try {
    const data = await api(`/api/ladders/${enc(ladderId)}/seasons/${enc(season.season_id)}/players/${enc(playerId)}/ratings`, { anonymous: true });
    fill(box,
      h("h4", {}, `${names[playerId] || playerId} in ${season.name}`),
      data.history.length
        ? h("ol", { class: "season-history" }, data.history.map((e) =>
          h("li", {}, `${e.result} against ${e.opponent_name || e.opponent_id}: `,
            `${Math.round(e.before)} → ${Math.round(e.after)}`,
            e.rd_after == null ? "" : ` (± ${Math.round(2 * e.rd_after)})`,
            e.reason === "timeout" ? " · on time" : "")))
        : h("p", { class: "muted" }, "No rated match in this season."));
  } catch (e) { fail(e); }
}

async function seasonSection(ladder, season, names, canOrganise, redraw) {
  let body;
  try {
    body = await api(`/api/ladders/${enc(ladder.id)}/seasons/${enc(season.season_id)}`, { anonymous: true });
  } catch (e) { fail(e); return null; }
  const end = canOrganise && season.phase === "running"
    ? h("button", { class: "btn danger", type: "button", "data-action": "end-season", onclick: async () => {
      try {
        await api(`/api/ladders/${enc(ladder.id)}/seasons/${enc(season.season_id)}/end`, { method: "POST" });
        toast(`${season.name} has ended: its standings are frozen as soon as the ratings catch up.`);
        redraw();
      } catch (e) { fail(e); }
    } }, "End this season now") : null;
  const reset = season.soft_reset ? ` · ratings moved ${Math.round(100 * season.soft_reset)} % back at its start` : "";
  return h("section", { class: "panel season", "data-season": season.season_id, "data-phase": season.phase,
    "aria-labelledby": `season-h-${season.season_id}` },
    h("div", { class: "row" }, h("h2", { id: `season-h-${season.season_id}` }, season.name),
      h("span", { class: `badge${season.phase === "running" ? " now" : ""}` }, PHASE[season.phase]), end),
    h("p", { class: "muted" }, `${when(season.started_at || season.starts_at)} – ${when(season.ended_at || season.ends_at)}`,
      season.ended_early ? " (ended early)" : "", reset),
    h("h3", {}, body.frozen ? "Final standings" : "Standings so far"),
    standingsTable(ladder.id, season, body.standings, names, ladder.rating_system === "glicko2"),
    h("div", { id: `history-${season.season_id}`, "aria-live": "polite" }));
}

function scheduleForm(ladder, redraw) {
  const name = h("input", { id: "season-name", required: true, maxlength: 100 });
  const ends = h("input", { id: "season-ends", type: "datetime-local", required: true });
  const starts = h("input", { id: "season-starts", type: "datetime-local" });
  const reset = h("input", { id: "season-reset", type: "number", min: 0, max: 1, step: 0.05, value: 0 });
  return h("form", { class: "panel", id: "schedule-season", "aria-label": "Schedule a season", onsubmit: async (e) => {
    e.preventDefault();
    const body = { name: name.value.trim(), ends_at: new Date(ends.value).toISOString(), soft_reset: Number(reset.value) };
    if (starts.value) body.starts_at = new Date(starts.value).toISOString();
    try {
      await api(`/api/ladders/${enc(ladder.id)}/seasons`, { method: "POST", body });
      toast(`Season ${body.name} scheduled.`);
      redraw();
    } catch (err) { fail(err); }
  } },
  h("h2", {}, "Schedule a season"),
  h("div", { class: "row" }, h("label", { for: "season-name" }, "Name"), name),
  h("div", { class: "row" }, h("label", { for: "season-starts" }, "Starts (empty: now)"), starts),
  h("div", { class: "row" }, h("label", { for: "season-ends" }, "Ends"), ends),
  h("div", { class: "row" }, h("label", { for: "season-reset" }, "Soft reset (0–1)"), reset),
  h("button", { class: "btn primary", type: "submit" }, "Schedule"));
}

/** The page main.js draws for /ladders/{ladderId}/seasons. */
export async function seasonsPage(root, ladderId) {
  const me = auth.me;
  const draw = async () => {
    try {
      const [ladder, seasons, members] = await Promise.all([
        api(`/api/ladders/${enc(ladderId)}`, { anonymous: true }),
        api(`/api/ladders/${enc(ladderId)}/seasons`, { anonymous: true }),
        api(`/api/ladders/${enc(ladderId)}/members`, { anonymous: true }),
      ]);
      document.title = `Matcha · ${ladder.name} · seasons`;
      const names = Object.fromEntries(members.map((m) => [m.player_id, m.name]));
      const canOrganise = !!me && me.id === ladder.created_by;
      const sections = [];
      for (const s of [...seasons].reverse()) sections.push(await seasonSection(ladder, s, names, canOrganise, draw));
      fill(root,
        h("p", {}, h("a", { href: "/" }, "← All ladders")),
        h("h1", {}, `${ladder.name}: seasons`),
        h("p", { class: "muted" }, `${ladder.rating_system === "glicko2" ? "Glicko-2" : "Elo"} ladder, ${ladder.clock ? `timed: ${timeControlText(ladder.clock)}` : "untimed"}. A season's final standings are frozen and published when it ends.`),
        canOrganise ? scheduleForm(ladder, draw) : null,
        sections.length ? sections : h("p", { class: "muted", id: "no-seasons" }, "This ladder has no season yet."));
    } catch (e) {
      fill(root, h("p", { class: "muted" }, e instanceof ApiError ? e.detail : String(e)));
    }
  };
  await draw();
}
