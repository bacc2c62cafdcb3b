// Tournament pages: the lobby (/tournaments) and one tournament (/tournaments/{id}):
// standings with tie-break columns, each round's pairings, the crosstable, live
// over Server-Sent Events. Drawn in the site's one shell by main.js (its header,
// theme and navigation); reads the JSON API with the token the client keeps.
import { auth, refreshMe } from "../api.js";

const enc = encodeURIComponent;
const token = () => auth.token || "";
const me = () => auth.me;
/** Organisers (and admins) may create a tournament; nobody else is shown the form. */
const organises = (who) => !!who && (who.roles || []).some((r) => r === "organiser" || r === "admin");

function h(tag, attrs = {}, ...kids) {
  const el = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs || {})) {
    if (v === false || v == null) continue;
    if (k.startsWith("on") && typeof v === "function") el.addEventListener(k.slice(2), v);
    else el.setAttribute(k, v === true ? "" : String(v));
  }
  for (const kid of kids.flat(Infinity)) if (kid != null && kid !== false) el.append(kid instanceof Node ? kid : String(kid));
  return el;
}

function toast(text, kind = "info") {
  const box = document.getElementById("toast");
  box.textContent = text; box.className = `toast ${kind}`; box.hidden = false;
  clearTimeout(toast.timer); toast.timer = setTimeout(() => { box.hidden = true; }, kind === "error" ? 8000 : 3000);
}

async function api(path, { method = "GET", body } = {}) {
  const headers = { Accept: "application/json" };
  if (body !== undefined) headers["Content-Type"] = "application/json";
  if (token()) headers.Authorization = `Bearer ${token()}`;
  const res = await fetch(path, { method, headers, body: body === undefined ? undefined : JSON.stringify(body) });
  const data = await res.json().catch(() => null);
  if (!res.ok) throw new Error((data && data.detail) || `${res.status} ${res.statusText}`);
  return data;
}
const act = (fn) => async (e) => { e && e.preventDefault && e.preventDefault(); try { await fn(); } catch (err) { toast(err.message, "error"); } };

const FORMAT = { swiss: "Swiss", round_robin: "Round-robin", arena: "Arena" };
const TIEBREAKS = ["buchholz_cut1", "buchholz", "sonneborn_berger", "direct_encounter", "wins", "games_won"];
const fmtText = (t) => {
  const f = t.format;
  if (f.type === "swiss") return `Swiss, ${f.rounds} rounds (bye ${f.bye_points})`;
  if (f.type === "round_robin") return `Round-robin${f.cycles === 2 ? ", double" : ""}`;
  return `Arena, ${f.minutes} min${f.avoid_repeats ? ", no repeats" : ""}`;
};
const stage = (t) => t.phase === "registering" ? (t.starts_at ? `starts ${new Date(t.starts_at).toLocaleString()}` : "open for entries")
  : t.phase === "finished" ? (t.format.type === "arena" ? "over" : `${t.round} rounds played`)
  : t.format.type === "arena" ? `running until ${new Date(t.ends_at).toLocaleTimeString()}`
  : `round ${t.round}${t.rounds ? ` of ${t.rounds}` : ""}`;
// Points as chess writes them: ½, 1½, 12 (never "0½"); other fractions (SB 9.75) as decimals.
const pts = (x) => {
  if (Number.isInteger(x)) return String(x);
  const whole = Math.trunc(x);
  if (Math.abs(x - whole) === 0.5) return `${whole === 0 ? (x < 0 ? "-" : "") : whole}½`;
  return String(Math.round(x * 100) / 100);
};
const playerLink = (playerId, name) => h("a", { href: `/player/${enc(playerId)}`, class: "player" }, name);

// ---- the lobby ------------------------------------------------------------------

async function lobby(root) {
  document.title = "Matcha · tournaments";
  // The roles as the service has them now (an admin may have just named an organiser).
  const [list, fresh] = await Promise.all([api("/api/tournaments?limit=200"), refreshMe()]);
  const who = fresh || me();
  const rows = list.map((t) => h("tr", { "data-tournament": t.id },
    h("td", {}, h("a", { href: `/tournaments/${enc(t.id)}` }, t.name)),
    h("td", {}, fmtText(t)), h("td", { class: "num" }, t.players),
    h("td", {}, h("span", { class: "badge" }, t.phase), " ", stage(t))));
  root.replaceChildren(
    h("h1", {}, "Tournaments"),
    h("div", { class: "panel scroll" }, list.length
      ? h("table", { id: "tournament-list" }, h("thead", {}, h("tr", {}, h("th", {}, "Name"), h("th", {}, "Format"),
          h("th", { class: "num" }, "Players"), h("th", {}, "Stage"))), h("tbody", {}, rows))
      : h("p", { class: "muted" }, "No tournaments yet.")),
    organises(who) ? await createForm()
      : h("p", { class: "muted", id: "organise-note" }, who
        ? "Open a tournament to join it. Organisers create them here; an admin names the organisers."
        : "Sign in on the main page to join a tournament."));
}

async function createForm() {
  const ladders = await api("/api/ladders");
  if (!ladders.length) return h("p", { class: "muted" }, "Create a ladder first to hold a tournament.");
  const field = (id, label, input, only) => h("div", { class: "row", "data-for": only }, h("label", { for: id }, label), input);
  const name = h("input", { id: "t-name", required: true, maxlength: 100 });
  const ladder = h("select", { id: "t-ladder" }, ladders.map((l) => h("option", { value: l.id }, `${l.name} (${l.ruleset})`)));
  const kind = h("select", { id: "t-format" }, Object.entries(FORMAT).map(([k, v]) => h("option", { value: k }, v)));
  const rounds = h("input", { id: "t-rounds", type: "number", min: 1, max: 50, value: 5 });
  const bye = h("select", { id: "t-bye" }, ["1", "0.5", "0"].map((v) => h("option", { value: v }, v)));
  const cycles = h("select", { id: "t-cycles" }, h("option", { value: 1 }, "single"), h("option", { value: 2 }, "double"));
  const minutes = h("input", { id: "t-minutes", type: "number", min: 1, value: 60 });
  const tbs = h("input", { id: "t-tiebreaks", class: "wide", placeholder: "default: the format's usual order" });
  const form = h("form", { class: "panel", id: "create-tournament", onsubmit: act(async () => {
    const type = kind.value;
    const format = type === "swiss" ? { type, rounds: Number(rounds.value), bye_points: Number(bye.value) }
      : type === "round_robin" ? { type, cycles: Number(cycles.value) } : { type, minutes: Number(minutes.value) };
    const body = { name: name.value.trim(), ladder_id: ladder.value, format };
    if (tbs.value.trim()) body.tiebreaks = tbs.value.split(",").map((s) => s.trim()).filter(Boolean);
    const made = await api("/api/tournaments", { method: "POST", body });
    location.href = `/tournaments/${enc(made.id)}`;
  }) },
    h("h2", {}, "Organise a tournament"),
    field("t-name", "Name", name), field("t-ladder", "Ladder", ladder), field("t-format", "Format", kind),
    field("t-rounds", "Swiss rounds", rounds, "swiss"), field("t-bye", "Bye points", bye, "swiss"),
    field("t-cycles", "Round-robin", cycles, "round_robin"), field("t-minutes", "Arena minutes", minutes, "arena"),
    field("t-tiebreaks", "Tie-breaks, in order", tbs),
    h("p", { class: "muted" }, `Tie-breaks: ${TIEBREAKS.join(", ")}.`),
    h("button", { class: "btn primary", type: "submit" }, "Create"));
  const only = () => form.querySelectorAll("[data-for]").forEach((row) => { row.hidden = row.dataset.for !== kind.value; });
  kind.addEventListener("change", only);
  only();
  return form;
}

// ---- one tournament ------------------------------------------------------------------

function standingsTable(s) {
  const head = h("tr", {}, h("th", { class: "num" }, "#"), h("th", {}, "Player"), h("th", { class: "num" }, "Points"),
    h("th", { class: "num" }, "W-D-L"), s.labels.map((l, i) => h("th", { class: "num", title: s.tiebreaks[i] }, l)),
    h("th", { class: "num" }, "Rating"));
  const rows = s.rows.map((r) => h("tr", { class: r.withdrawn ? "withdrawn" : null, "data-player": r.player_id },
    h("td", { class: "num" }, r.rank), h("td", {}, playerLink(r.player_id, r.name), r.on_streak ? h("span", { class: "streak", title: "on a streak: double points" }, " 🔥") : null),
    h("td", { class: "num points" }, pts(r.points)), h("td", { class: "num" }, `${r.wins}-${r.draws}-${r.losses}`),
    r.tiebreaks.map((v) => h("td", { class: "num" }, v == null ? "–" : pts(v))), h("td", { class: "num" }, Math.round(r.rating))));
  return h("table", { id: "standings" }, h("thead", {}, head), h("tbody", {}, rows));
}

const RESULT = { "1-0": "1 – 0", "0-1": "0 – 1", "1/2-1/2": "½ – ½", "+-": "+ – −", "-+": "− – +", "--": "− – −" };

function gameRow(g) {
  const result = g.annulled ? "annulled" : g.result ? RESULT[g.result] + (g.counted ? "" : " (late)") : "playing";
  const link = g.match_id ? h("a", { href: `/watch/${enc(g.match_id)}` }, g.result ? "replay" : "watch") : "";
  return h("tr", { "data-game": g.game }, h("td", { class: "num" }, g.board), h("td", {}, playerLink(g.players[0], g.names[0])),
    h("td", { class: "result" }, result), h("td", {}, playerLink(g.players[1], g.names[1])), h("td", {}, link));
}

function pairingsView(p) {
  if (!p.rounds.length) return [h("p", { class: "muted" }, "No pairings yet.")];
  return p.rounds.slice().reverse().map((r) => {
    const head = h("tr", {}, h("th", { class: "num" }, "Board"), h("th", {}, "Seat 0"), h("th", {}, "Result"),
      h("th", {}, "Seat 1"), h("th", {}, ""));
    const games = r.round ? r.games : r.games.slice().reverse();  // an arena: newest first
    const byes = r.byes.length
      ? h("p", { class: "byes" }, "Byes: ", r.byes.flatMap((b, i) => [i ? ", " : "", playerLink(b.player_id, b.name), ` (${b.kind}, ${pts(b.points)})`]))
      : null;
    return h("section", { class: "panel scroll", "data-round": r.round },
      h("h2", {}, r.round ? `Round ${r.round}` : "Arena games"),
      h("table", { class: "pairings" }, h("thead", {}, head), h("tbody", {}, games.map(gameRow))), byes);
  });
}

const CELL = { win: "1", draw: "½", loss: "0", forfeit_win: "+", forfeit_loss: "−", double_forfeit: "−", bye: "B", unpaired: "U", rest: "R", half: "H", late: "Z", absent: "·", annulled: "×", playing: "…" };
const cellClass = (c) => c.kind.includes("win") ? "cell-win" : c.kind === "draw" ? "cell-draw" : c.kind.includes("loss") ? "cell-loss" : null;

function crosstableView(x, roundRobin) {
  if (!x.rows.length) return h("p", { class: "muted" }, "Nothing played yet.");
  if (roundRobin) {  // a matrix: each row's results against each column's player
    return h("table", { id: "crosstable" }, h("thead", {}, h("tr", {}, h("th", {}, "#"), h("th", {}, "Player"),
      x.rows.map((r) => h("th", { class: "num" }, r.place)), h("th", { class: "num" }, "Points"))),
      h("tbody", {}, x.rows.map((r) => h("tr", {}, h("td", {}, r.place), h("td", {}, playerLink(r.player_id, r.name)),
        x.rows.map((o) => {
          if (o.player_id === r.player_id) return h("td", { class: "num" }, "■");
          const cells = r.cells.filter((c) => c.opponent === o.player_id);
          return h("td", { class: `num ${cells.length ? cellClass(cells[0]) || "" : ""}` }, cells.map((c) => CELL[c.kind]).join(" "));
        }), h("td", { class: "num" }, pts(r.points))))));
  }
  const width = Math.max(...x.rows.map((r) => r.cells.length));
  return h("div", {}, h("p", { class: "muted" }, "Each cell: the opponent's place, a (seat 0) or b (seat 1), the result; B bye, R rest, + − forfeits, · absent."),
  h("table", { id: "crosstable" }, h("thead", {}, h("tr", {}, h("th", {}, "#"), h("th", {}, "Player"),
    Array.from({ length: width }, (_, i) => h("th", { class: "num" }, i + 1)), h("th", { class: "num" }, "Points"))),
    h("tbody", {}, x.rows.map((r) => h("tr", {}, h("td", {}, r.place), h("td", {}, playerLink(r.player_id, r.name)),
      Array.from({ length: width }, (_, i) => {
        const c = r.cells[i];
        if (!c) return h("td", {});
        const seat = c.seat == null ? "" : c.seat === 0 ? "a" : "b";
        return h("td", { class: `num ${cellClass(c) || ""}`, title: c.kind },
          `${c.opponent_place ?? ""}${seat}${CELL[c.kind]}`);
      }), h("td", { class: "num" }, pts(r.points)))))));
}

async function tournamentPage(root, id) {
  let tab = location.hash.slice(1) || "standings";
  const body = h("div", { id: "tab-body" });
  const head = h("div", { id: "tournament-head" });
  const tabs = h("div", { class: "tabs", role: "tablist" });
  root.replaceChildren(head, tabs, body);

  async function actions(t) {
    const mine = me();
    const out = [];
    if (!mine) return out;
    const organiser = mine.id === t.organiser;
    const post = (path, what, bodyJson) => act(async () => { await api(`/api/tournaments/${enc(id)}/${path}`, { method: "POST", body: bodyJson }); toast(what); await draw(); });
    // Only the button this player can use: Join when not in (and entries are
    // open), Withdraw when in; never both.
    const standing = (await api(`/api/tournaments/${enc(id)}/standings`)).rows.find((r) => r.player_id === mine.id);
    const entered = standing !== undefined && !standing.withdrawn;
    const lastRound = t.format.type === "swiss" ? (t.format.late_entry_until || t.format.rounds) : null;
    const open = t.phase === "registering" || (t.phase === "running" && t.format.type === "arena")
      || (t.phase === "running" && t.format.type === "swiss" && t.round + 1 <= lastRound);
    if (t.phase !== "finished" && !entered && open) {
      out.push(h("button", { class: "btn", "data-action": "join", onclick: post("players", "You are in.") }, "Join"));
    }
    if (t.phase !== "finished" && entered) {
      out.push(h("button", { class: "btn", "data-action": "withdraw", onclick: act(async () => {
        await api(`/api/tournaments/${enc(id)}/players/${enc(mine.id)}`, { method: "DELETE" }); toast("You withdrew (from the next round)."); await draw();
      }) }, "Withdraw"));
    }
    if (organiser && t.phase === "registering") out.push(h("button", { class: "btn primary", "data-action": "start", onclick: post("start", "Started.") }, "Start"));
    if (organiser && t.phase === "running" && !t.round_open && t.format.type !== "arena") {
      out.push(h("button", { class: "btn primary", "data-action": "pair", onclick: post("rounds", `Round ${t.round + 1} paired.`, { round: t.round + 1 }) }, `Pair round ${t.round + 1}`));
    }
    return out;
  }

  async function draw() {
    const t = await api(`/api/tournaments/${enc(id)}`);
    document.title = `Matcha · ${t.name}`;
    head.replaceChildren(h("h1", {}, t.name), h("p", {}, h("span", { class: "badge", id: "phase" }, t.phase), " ",
      fmtText(t), " · ", stage(t), ` · ${t.players} players · tie-breaks: ${t.tiebreaks.join(", ") || "none"}`),
      h("div", { class: "row" }, await actions(t)));
    tabs.replaceChildren(...["standings", "pairings", "crosstable"].map((name) => h("button", {
      class: "btn", role: "tab", "aria-selected": String(tab === name), "data-tab": name,
      onclick: () => { tab = name; location.hash = name; draw(); } }, name[0].toUpperCase() + name.slice(1))));
    if (tab === "pairings") body.replaceChildren(...pairingsView(await api(`/api/tournaments/${enc(id)}/rounds`)));
    else if (tab === "crosstable") body.replaceChildren(h("div", { class: "panel scroll" }, crosstableView(await api(`/api/tournaments/${enc(id)}/crosstable`), t.format.type === "round_robin")));
    else body.replaceChildren(h("div", { class: "panel scroll" }, standingsTable(await api(`/api/tournaments/${enc(id)}/standings`))));
  }

  await draw();
  // Live: every new version of the standings redraws the open tab.
  const live = new EventSource(`/api/tournaments/${enc(id)}/standings/stream`);
  let shown = -1;
  live.addEventListener("standings", (e) => {
    const s = JSON.parse(e.data);
    if (shown !== -1 && s.version !== shown) draw().catch((err) => toast(err.message, "error"));
    shown = s.version;
    document.body.dataset.version = String(s.version);
  });
}

/** The page main.js draws for /tournaments (no id) and /tournaments/{id}. */
export async function tournamentsPage(root, id) {
  if (!document.querySelector("link[data-tournaments]")) {
    document.head.append(h("link", { rel: "stylesheet", href: "/static/tournaments/tournaments.css", "data-tournaments": true }));
  }
  root.classList.add("t-page");
  try {
    if (typeof id === "string") await tournamentPage(root, id); // (main.js passes its account() after)
    else await lobby(root);
  } catch (err) {
    root.replaceChildren(h("p", { class: "error" }, err.message));
  }
}
