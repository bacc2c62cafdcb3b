// A player's page: each ladder's standing with a rating chart (axes, values,
// Glicko-2 uncertainty where the API gives it), recent matches with replays,
// and the record against each opponent.
import { api } from "./api.js";
import { fill, h } from "./dom.js";
import { historyChart, ratingText } from "./chart.js";
import { learn, learnIds, nameOf, playerLink } from "./names.js";

const enc = encodeURIComponent;
const day = (iso) => new Date(iso).toLocaleDateString(undefined, { year: "numeric", month: "short", day: "numeric" });

async function ladderCard(playerId, s) {
  let data = null;
  let standing = null;
  try { data = await api(`/api/ladders/${enc(s.ladder_id)}/players/${enc(playerId)}/ratings?limit=1000`, { anonymous: true }); } catch { data = null; }
  try {
    const board = await api(`/api/ladders/${enc(s.ladder_id)}/leaderboard?limit=1000`, { anonymous: true });
    standing = board.standings.find((x) => x.player_id === playerId) || null;
  } catch { standing = null; }
  const shown = { ...s, ...(standing || {}) };
  const interval = standing && standing.interval ? ` (95%: ${Math.round(standing.interval[0])}–${Math.round(standing.interval[1])})` : "";
  const facts = [
    ["Rating", s.rating == null ? "unrated" : `${ratingText(shown)}${interval}`],
    ["Rank", s.rank ? `${s.rank} of ${s.players}` : "—"],
    ["Games", `${s.games} (${s.wins} won, ${s.draws} drawn, ${s.losses} lost)`],
    ["Peak", s.peak == null ? "—" : String(Math.round(s.peak))],
  ];
  return h("section", { class: "panel standing", "data-ladder": s.ladder_id, "aria-labelledby": `l-${s.ladder_id}` },
    h("div", { class: "row" }, h("h2", { id: `l-${s.ladder_id}` }, s.ladder_name), h("span", { class: "badge" }, s.ruleset),
      s.provisional && s.rating != null ? h("span", { class: "badge", title: "few games yet: the rating still moves fast" }, "provisional") : null),
    h("dl", { class: "facts" }, facts.map(([k, v]) => [h("dt", {}, k), h("dd", {}, v)])),
    data ? historyChart(data.history, { title: `Rating on ${s.ladder_name}` }) : null,
    data && data.refunds && data.refunds.length ? refundList(data.refunds) : null);
}

// Rating given back because an opponent was closed for fair play (docs/fairplay.md).
function refundList(refunds) {
  return h("ul", { class: "refunds" }, refunds.map((r) => h("li", { "data-refund": r.closed_player },
    `${r.amount >= 0 ? "+" : "−"}${Math.abs(r.amount).toFixed(1)} (${Math.round(r.before)} → ${Math.round(r.after)}): ${r.reason}`)));
}

function resultFor(playerId, m) {
  if (m.status === "annulled") return "annulled";
  if (m.end_reason === "aborted") return "aborted"; // a no-show: no winner, yet no draw
  if (m.winner === null || m.winner === undefined) return "draw";
  return m.players[m.winner] === playerId ? "won" : "lost";
}

export async function playerPage(root, playerId) {
  let profile;
  try {
    profile = await api(`/api/players/${enc(playerId)}`, { anonymous: true });
  } catch (e) {
    fill(root, h("h1", {}, "Player"), h("p", { class: "panel", id: "message" }, e.detail || String(e)));
    return;
  }
  learn(profile.id, profile.name);
  const [recent, h2h] = await Promise.all([
    api(`/api/matches?player=${enc(playerId)}&limit=20`, { anonymous: true }).catch(() => []),
    api(`/api/players/${enc(playerId)}/head-to-head`, { anonymous: true }).catch(() => []),
  ]);
  await learnIds(recent.flatMap((m) => m.players));
  for (const r of h2h) learn(r.opponent_id, r.opponent_name);
  const rec = profile.record;
  const cards = await Promise.all(profile.ladders.map((s) => ladderCard(playerId, s)));
  document.title = `${profile.name} · Matcha`;
  fill(root,
    h("div", { class: "match-head" }, h("h1", { id: "player-name" }, profile.name),
      profile.roles.filter((r) => r !== "player").map((r) => h("span", { class: "badge" }, r)),
      profile.closed_for_fair_play ? h("span", { class: "badge", id: "closed" }, "closed for fair play") : null),
    h("p", { class: "muted", id: "record" }, `${rec.matches} finished match${rec.matches === 1 ? "" : "es"}: ${rec.wins} won, ${rec.draws} drawn, ${rec.losses} lost`,
      rec.aborted ? `, ${rec.aborted} aborted` : "",
      rec.live ? ` · ${rec.live} being played` : "", ` · playing since ${day(profile.joined_at)}`),
    h("div", { class: "player-grid" },
      h("div", {}, cards.length ? cards : h("p", { class: "panel muted" }, "Not on any ladder yet.")),
      h("div", {},
        h("section", { class: "panel", "aria-labelledby": "recent-h" }, h("h2", { id: "recent-h" }, "Recent matches"),
          recent.length ? h("table", { class: "list", id: "recent" },
            h("thead", {}, h("tr", {}, ["Opponent", "Result", "Date", ""].map((t) => h("th", { scope: "col" }, t)))),
            h("tbody", {}, recent.map((m) => {
              const opp = m.players[0] === playerId ? m.players[1] : m.players[0];
              const res = m.status === "live" ? "playing" : resultFor(playerId, m);
              return h("tr", { "data-match": m.match_id },
                h("td", {}, playerLink(opp)), h("td", { class: `res ${res}` }, res), h("td", {}, day(m.updated_at)),
                h("td", {}, m.status === "live" ? h("a", { class: "btn small", href: `/watch/${m.match_id}` }, "Watch")
                  : h("a", { class: "btn small", href: `/replay/${m.match_id}` }, "Replay")));
            }))) : h("p", { class: "muted" }, "No matches yet.")),
        h("section", { class: "panel", "aria-labelledby": "h2h-h" }, h("h2", { id: "h2h-h" }, "Head to head"),
          h2h.length ? h("div", { class: "table-scroll" }, h("table", { class: "list", id: "h2h" },
            h("thead", {}, h("tr", {}, ["Opponent", "Played", "Won", "Drawn", "Lost", "Aborted", "Last"].map((t) => h("th", { scope: "col" }, t)))),
            h("tbody", {}, h2h.map((r) => h("tr", { "data-opponent": r.opponent_id },
              h("td", {}, playerLink(r.opponent_id, r.opponent_name || nameOf(r.opponent_id))), h("td", { class: "num" }, r.matches),
              h("td", { class: "num" }, r.wins), h("td", { class: "num" }, r.draws), h("td", { class: "num" }, r.losses),
              h("td", { class: "num" }, r.aborted || 0),
              h("td", {}, h("a", { href: `/replay/${r.last_match_id}` }, day(r.last_played_at))))))))
            : h("p", { class: "muted" }, "No finished match against anyone yet.")))));
}
