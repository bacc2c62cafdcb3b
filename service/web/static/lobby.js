// The lobby: sign in, play (your matches, find a match), live and finished
// matches, and the ladders' leaderboards. On a phone the four fold into tabs.
import { api, ApiError, auth, signIn, signUp } from "./api.js";
import { fill, h, toast } from "./dom.js";
import { KINDS, token } from "./cards.js";
import { ratingChart, ratingText } from "./chart.js";
import { learn, learnIds, learnLadder, nameOf, playerLink } from "./names.js";
import { tabbed } from "./tabs.js";
import { timeControlText } from "./clocks.js";

const enc = encodeURIComponent;
const fail = (e) => toast(e instanceof ApiError ? e.detail : String(e), "error");

function signInPanel(onDone) {
  const me = auth.me;
  if (me) {
    const box = h("p", { class: "token-box", hidden: true, id: "my-token" }, auth.token);
    return h("section", { class: "panel", id: "sign-in", "aria-label": "Your account" },
      h("p", {}, "Signed in as ", playerLink(me.id, me.name), ". Your token signs you in on another device: ",
        h("button", { class: "btn small", type: "button", onclick: () => { box.hidden = !box.hidden; } }, "Show / hide my token")),
      box);
  }
  const form = (id, label, submit, act, hint) => {
    const input = h("input", { id, required: true, autocomplete: "off", spellcheck: "false", "aria-describedby": `${id}-hint` });
    return h("form", { class: "field", onsubmit: async (e) => {
      e.preventDefault();
      try { toast(await act(input.value.trim())); onDone(); } catch (err) { fail(err); }
    } }, h("label", { for: id }, label), h("div", { class: "row" }, input, h("button", { class: "btn primary", type: "submit" }, submit)),
    h("small", { class: "muted", id: `${id}-hint` }, hint));
  };
  return h("section", { class: "panel", id: "sign-in", "aria-labelledby": "sign-in-h" },
    h("h2", { id: "sign-in-h" }, "Sign in to play"),
    form("reg-name", "New here? Pick a player name", "Register",
      async (name) => { await signUp(name); return "Registered: your token is kept in this browser."; },
      "Names are public and unique."),
    form("paste-token", "…or paste your token", "Sign in", async (t) => { await signIn(t); return "Signed in."; },
      "The token you were given when you registered (or the admin token of make run)."));
}

async function history(ladderId, playerId) {
  try {
    const data = await api(`/api/ladders/${enc(ladderId)}/players/${enc(playerId)}/ratings`, { anonymous: true });
    const rows = data.history.sort((a, b) => a.game - b.game);
    return rows.length ? [rows[0].before, ...rows.map((r) => r.after)] : [];
  } catch {
    return [];
  }
}

async function leaderboard(ladder) {
  let board = null;
  try { board = (await api(`/api/ladders/${enc(ladder.id)}/leaderboard`, { anonymous: true })).standings; } catch { board = null; }
  const rows = (board || []).map((p) => {
    const pid = p.player_id;
    learn(pid, p.name);
    const cell = h("td", { class: "spark" }, ratingChart([]));
    history(ladder.id, pid).then((pts) => cell.replaceChildren(ratingChart(pts)));
    return h("tr", { "data-player": pid },
      h("td", {}, p.rank), h("td", {}, playerLink(pid, p.name || nameOf(pid))),
      h("td", { class: "num", title: p.provisional ? "provisional: few games yet" : null }, ratingText(p)),
      h("td", { class: "num" }, `${p.wins}–${p.draws}–${p.losses}`),
      h("td", { class: "num timeouts", title: "matches lost on time" }, String(p.timeouts ?? 0)), cell);
  });
  return h("section", { class: "panel ladder", "data-ladder": ladder.id, "aria-label": `Leaderboard of ${ladder.name}` },
    h("div", { class: "row" }, h("h3", {}, ladder.name), h("span", { class: "badge" }, ladder.ruleset),
      h("span", { class: "badge time-control" }, timeControlText(ladder.clock)),
      board && board[0] && board[0].rd != null ? h("span", { class: "badge" }, "Glicko-2") : null,
      h("a", { class: "btn small", href: `/ladders/${enc(ladder.id)}/seasons`, "data-action": "seasons" }, "Seasons")),
    board === null ? h("p", { class: "muted" }, "The leaderboard is not available yet.")
      : rows.length ? h("table", { class: "list" },
        h("thead", {}, h("tr", {}, ["#", "Player", "Rating", "W–D–L", "Time-outs", "Trend"].map((t) => h("th", { scope: "col" }, t)))),
        h("tbody", {}, rows))
        : h("p", { class: "muted" }, "No rated players yet: ratings appear after the first finished match."));
}

function playRow(ladder, members, redraw) {
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
  return h("li", { class: "ladder-play", "data-ladder": ladder.id },
    h("span", {}, h("b", {}, ladder.name), " ", h("span", { class: "badge" }, ladder.ruleset),
      " ", h("span", { class: "badge time-control" }, timeControlText(ladder.clock)),
      h("small", { class: "muted" }, ` ${members.length} member${members.length === 1 ? "" : "s"}`)),
    h("span", { class: "row" }, join, queue, !me ? h("small", { class: "muted" }, "sign in to play") : null));
}

function scores(summary) {
  return summary.tokens.map((t, seat) => h("span", { class: "scores", "data-seat": seat },
    KINDS.map((k) => token(k, t[k] || 0))));
}

function matchRow(s) {
  const me = auth.me;
  const mine = me && s.players.includes(me.id);
  const link = s.status === "live"
    ? [mine ? h("a", { class: "btn primary small", href: `/play/${s.match_id}` }, "Play") : null, " ",
      h("a", { class: "btn small", href: `/watch/${s.match_id}` }, "Watch")]
    : h("a", { class: "btn small", href: `/replay/${s.match_id}` }, "Replay");
  const result = s.status === "finished"
    // A no-show has no winner either, but it is no draw: it was aborted, unrated.
    ? (s.end_reason === "aborted" ? "aborted"
      : s.winner === null || s.winner === undefined ? "draw" : `${nameOf(s.players[s.winner])} won`)
    : s.status === "annulled" ? "annulled" : `hand ${s.hand}`;
  const [sa, sb] = scores(s);
  return h("tr", { "data-match": s.match_id, "data-status": s.status },
    h("td", {}, playerLink(s.players[0]), h("br"), sa), h("td", {}, playerLink(s.players[1]), h("br"), sb),
    h("td", { class: "res" }, result), h("td", { class: "go" }, link));
}

function matchTable(id, list, empty, caption) {
  return list.length
    ? h("table", { class: "list matches", id }, h("caption", { class: "sr" }, caption),
      h("thead", {}, h("tr", {}, ["Seat 0", "Seat 1", "State", "Open"].map((t) => h("th", { scope: "col" }, t)))),
      h("tbody", {}, list.map(matchRow)))
    : h("p", { class: "muted", id }, empty);
}

export async function lobbyPage(root, account) {
  let live = new Map();   // live matches by id, as last drawn
  let streaming = false;
  let ladders = [];
  let members = new Map();
  let boards = [];        // leaderboards: read again only on sign-in or join
  let tab = location.hash === "#sign-in" ? "play" : (location.hash || "#play").slice(1);
  const full = async () => {
    ladders = await api("/api/ladders", { anonymous: true }).catch((e) => { fail(e); return []; });
    members = new Map(await Promise.all(ladders.map(async (l) => [l.id, await learnLadder(l.id)])));
    boards = await Promise.all(ladders.map(leaderboard));
    await draw();
  };
  const draw = async () => {
    const [current, finished] = await Promise.all([
      api("/api/matches?status=live&limit=50", { anonymous: true }).catch(() => []),
      api("/api/matches?status=finished&limit=30", { anonymous: true }).catch(() => []),
    ]);
    await learnIds([...current, ...finished].flatMap((s) => s.players));
    const me = auth.me;
    const mine = me ? current.filter((s) => s.players.includes(me.id)) : [];
    const play = [
      signInPanel(() => { account(); full(); }),
      h("p", {}, h("a", { class: "btn", href: "/practice", id: "practice-link" }, "Practice against a bot")),
      mine.length ? h("section", { class: "panel", id: "my-matches" }, h("h2", {}, "Your matches"), matchTable("mine", mine, "", "Your live matches")) : null,
      h("section", { class: "panel" }, h("h2", {}, "Find a match"),
        ladders.length ? h("ul", { class: "plain" }, ladders.map((l) => playRow(l, members.get(l.id) || [], full)))
          : h("p", { class: "muted" }, "No ladders yet: an organiser creates one (README, Ladders and ratings).")),
    ];
    const liveNow = [h("h2", {}, "Live matches ", h("small", { class: "muted", id: "lobby-live" }, streaming ? "(updating live)" : "")),
      matchTable("live", current, "No match is being played right now.", "Live matches")];
    const done = [h("h2", {}, "Finished matches"), matchTable("finished", finished, "No finished match yet.", "Finished matches")];
    const tables = [h("h2", {}, "Ladders"), boards.length ? boards : h("p", { class: "muted" }, "No ladders yet.")];
    fill(root,
      h("h1", { class: "sr" }, "Matcha lobby"),
      tabbed("lobby", [
        { id: "play", label: "Play", body: play },
        { id: "live", label: `Live (${current.length})`, body: liveNow },
        { id: "finished", label: "Finished", body: done },
        { id: "ladders", label: "Ladders", body: tables },
      ], ["play", "live", "finished", "ladders"].includes(tab) ? tab : "play", (id) => { tab = id; history_(id); }));
    live = new Map(current.map((s) => [s.match_id, s]));
  };
  const history_ = (id) => window.history.replaceState(null, "", `#${id}`);
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
      const focused = document.activeElement && document.activeElement.id;
      await draw();
      if (focused) document.getElementById(focused)?.focus();
    }
  };
  for (const name of ["message", "lobby"]) es.addEventListener(name, onFrame);
  es.onopen = () => { streaming = true; const el = document.getElementById("lobby-live"); if (el) el.textContent = "(updating live)"; };
}
