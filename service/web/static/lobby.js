// The lobby: sign in, ladders and their leaderboards, live and finished matches.
import { api, ApiError, auth, signIn, signUp } from "./api.js";
import { fill, h, toast } from "./dom.js";
import { KINDS, token } from "./cards.js";
import { ratingChart } from "./chart.js";
import { learn, learnLadder, nameOf } from "./names.js";

const enc = encodeURIComponent;
const fail = (e) => toast(e instanceof ApiError ? e.detail : String(e), "error");

function signInPanel(onDone) {
  const me = auth.me;
  if (me) {
    const box = h("p", { class: "token-box", hidden: true, id: "my-token" }, auth.token);
    return h("section", { class: "panel", id: "sign-in", "aria-label": "Your account" },
      h("p", {}, "Signed in as ", h("b", {}, me.name), ". Your token signs you in on another device: ",
        h("button", { class: "btn", type: "button", onclick: () => { box.hidden = !box.hidden; } }, "Show / hide my token")),
      box);
  }
  const form = (id, label, submit, act) => {
    const input = h("input", { id, required: true, autocomplete: "off", spellcheck: "false" });
    return h("form", { class: "row", onsubmit: async (e) => {
      e.preventDefault();
      try { toast(await act(input.value.trim())); onDone(); } catch (err) { fail(err); }
    } }, h("label", { for: id }, label), input, h("button", { class: "btn", type: "submit" }, submit));
  };
  return h("section", { class: "panel", id: "sign-in", "aria-labelledby": "sign-in-h" },
    h("h2", { id: "sign-in-h" }, "Sign in"),
    form("reg-name", "New player name", "Register",
      async (name) => { await signUp(name); return "Registered: your token is kept in this browser."; }),
    form("paste-token", "…or paste your token", "Sign in", async (token) => { await signIn(token); return "Signed in."; }));
}

async function history(ladderId, playerId) {
  try {
    const data = await api(`/api/ladders/${enc(ladderId)}/players/${enc(playerId)}/ratings`, { anonymous: true });
    // Each match moves a rating from `before` to `after`; the line starts at the first `before`.
    const rows = data.history.sort((a, b) => a.position - b.position);
    return rows.length ? [rows[0].before, ...rows.map((r) => r.after)] : [];
  } catch {
    return [];
  }
}

async function ladderSection(ladder, redraw) {
  const members = await learnLadder(ladder.id);
  let board = null;
  try {
    const data = await api(`/api/ladders/${enc(ladder.id)}/leaderboard`, { anonymous: true });
    board = data.standings;
  } catch { board = null; }
  const me = auth.me;
  const member = me && members.some((m) => m.player_id === me.id);
  const join = me && !member ? h("button", { class: "btn", type: "button", "data-action": "join", onclick: async () => {
    try { await api(`/api/ladders/${enc(ladder.id)}/members`, { method: "POST" }); toast(`You joined ${ladder.name}.`); redraw(); } catch (e) { fail(e); }
  } }, "Join") : null;
  // The queue: paired at once with the nearest-rated waiting member, or wait.
  const queue = member ? h("button", { class: "btn primary", type: "button", "data-action": "queue", onclick: async (e) => {
    try {
      const res = await api(`/api/ladders/${enc(ladder.id)}/queue`, { method: "POST" });
      if (res.status === "matched") location.assign(`/play/${res.match.match_id}`);
      else { e.target.textContent = "Waiting for an opponent…"; e.target.disabled = true; }
    } catch (err) { fail(err); }
  } }, "Find a match") : null;
  const rows = (board || []).map((p) => {
    const pid = p.player_id;
    learn(pid, p.name);
    const cell = h("td", {}, ratingChart([]));
    history(ladder.id, pid).then((pts) => cell.replaceChildren(ratingChart(pts)));
    return h("tr", { "data-player": pid },
      h("td", {}, p.rank), h("td", {}, nameOf(pid)),
      h("td", {}, Math.round(p.rating)), h("td", {}, p.games), cell);
  });
  return h("section", { class: "panel ladder", "data-ladder": ladder.id, "aria-label": `Ladder ${ladder.name}` },
    h("div", { class: "row" }, h("h2", {}, ladder.name), h("span", { class: "badge" }, ladder.ruleset), join, queue, h("a", { class: "btn", href: `/ladders/${enc(ladder.id)}/seasons`, "data-action": "seasons" }, "Seasons")),
    board === null
      ? h("p", { class: "muted" }, "The leaderboard is not available yet.")
      : rows.length
        ? h("table", { class: "list" }, h("thead", {}, h("tr", {}, ["#", "Player", "Rating", "Games", "History"].map((t) => h("th", { scope: "col" }, t)))),
          h("tbody", {}, rows))
        : h("p", { class: "muted" }, "No rated players yet."));
}

function scores(summary) {
  return summary.tokens.map((t, seat) => h("span", { class: "scores", "data-seat": seat },
    KINDS.map((k) => token(k, t[k] || 0))));
}

function matchRow(s) {
  const me = auth.me;
  const mine = me && s.players.includes(me.id);
  const [a, b] = s.players.map(nameOf);
  const link = s.status === "live"
    ? [mine ? h("a", { class: "btn primary", href: `/play/${s.match_id}` }, "Play") : null, " ",
      h("a", { class: "btn", href: `/watch/${s.match_id}` }, "Watch")]
    : h("a", { class: "btn", href: `/replay/${s.match_id}` }, "Replay");
  const result = s.status === "finished"
    ? (s.winner === null || s.winner === undefined ? "draw" : `${s.players.map(nameOf)[s.winner]} won`)
    : s.status === "annulled" ? "annulled" : `hand ${s.hand}`;
  const [sa, sb] = scores(s);
  return h("tr", { "data-match": s.match_id, "data-status": s.status },
    h("td", {}, a, h("br"), sa), h("td", {}, b, h("br"), sb), h("td", { class: "res" }, result), h("td", {}, link));
}

function matchTable(id, list, empty) {
  return list.length
    ? h("table", { class: "list", id }, h("thead", {}, h("tr", {}, ["Seat 0", "Seat 1", "", ""].map((t) => h("th", { scope: "col" }, t)))),
      h("tbody", {}, list.map(matchRow)))
    : h("p", { class: "muted", id }, empty);
}

export async function lobbyPage(root, account) {
  let live = new Map();   // live matches by id, as last drawn
  let streaming = false;
  let sections = [];      // ladders and leaderboards: read again only on sign-in or join
  const full = async () => {
    const ladders = await api("/api/ladders", { anonymous: true }).catch((e) => { fail(e); return []; });
    sections = await Promise.all(ladders.map((l) => ladderSection(l, full)));
    await draw();
  };
  const draw = async () => {
    const [current, finished] = await Promise.all([
      api("/api/matches?status=live&limit=50", { anonymous: true }).catch(() => []),
      api("/api/matches?status=finished&limit=30", { anonymous: true }).catch(() => []),
    ]);
    const byId = new Map(current.map((s) => [s.match_id, s]));
    const me = auth.me;
    const mine = me ? current.filter((s) => s.players.includes(me.id)) : [];
    fill(root,
      h("h1", {}, "Matcha lobby"),
      signInPanel(() => { account(); full(); }),
      h("p", {}, h("a", { class: "btn", href: "/static/practice.html", id: "practice-link" }, "Practice against a bot")),
      mine.length ? h("section", { class: "panel", id: "my-matches" }, h("h2", {}, "Your matches"), matchTable("mine", mine, "")) : null,
      h("h2", {}, "Live matches ", h("small", { class: "muted", id: "lobby-live" }, streaming ? "(updating live)" : "")),
      matchTable("live", current, "No match is being played right now."),
      h("h2", {}, "Finished matches"),
      matchTable("finished", finished, "No finished match yet."),
      h("h2", {}, "Ladders"),
      sections.length ? sections : h("p", { class: "muted" }, "No ladders yet."));
    live = byId;
  };
  await full();

  // Scores update live from the lobby stream; a match that starts or ends redraws the lists.
  if (!window.EventSource) return;
  const es = new EventSource("/api/lobby/stream");
  const onFrame = async (m) => {
    let f;
    try { f = JSON.parse(m.data); } catch { return; }
    const s = f.summary || f;
    if (!s.match_id) return;
    const rows = document.querySelectorAll(`tr[data-match="${CSS.escape(s.match_id)}"]`);
    if (s.status === "progress" && rows.length && s.tokens) {
      const next = { ...live.get(s.match_id), ...s, status: "live" };
      live.set(s.match_id, next);
      rows.forEach((row) => row.replaceWith(matchRow(next)));
    } else {
      const me = auth.me;
      if (s.status === "started" && me && s.players && s.players.includes(me.id) && document.querySelector('[data-action="queue"]:disabled')) {
        location.assign(`/play/${s.match_id}`);
        return;
      }
      await draw();
    }
  };
  for (const name of ["message", "lobby"]) es.addEventListener(name, onFrame);
  es.onopen = () => { streaming = true; const el = document.getElementById("lobby-live"); if (el) el.textContent = "(updating live)"; };
}
