// The replay of a finished match: one frame per event, stepped, played, scrubbed,
// jumped to a hand or a round, and linked (?frame=N). Frames are views the
// service builds (GET .../replay/frames/N); the client never folds events itself.
import { api } from "./api.js";
import { fill, h, toast } from "./dom.js";
import { explainEnd } from "./explain.js";
import { describe, revealPanel } from "./match.js";
import { learn, nameOf, playerLink } from "./names.js";
import { oddsBar } from "./odds.js";
import { PLACE, renderTable, status } from "./table.js";
import { receiptsOf } from "./receipts.js";
import { verifiedBadge } from "./verified.js";

const SPEEDS = [0.5, 1, 2, 4];

/** Hide both hands in a view (the viewer's choice; the ladder may already have). */
function withoutHands(view) {
  return { ...view, seats: view.seats.map((s) => ({ ...s, hand: null, kept: null })) };
}

/**
 * Where each hand starts and each round is revealed, from the replay's summary.
 * A summary entry gives the hand and round *after* its event, so a reveal's own
 * round is the one before it (after round 1's reveal the table is at round 2).
 */
export function jumpMarks(summary) {
  const marks = [];
  summary.forEach((f, i) => {
    const before = summary[i - 1] || f;
    if (f.type === "hand_dealt") marks.push({ n: f.version, kind: "deal", hand: f.hand, label: `Hand ${f.hand}: the deal` });
    if (f.type === "round_revealed") {
      marks.push({ n: f.version, kind: "reveal", hand: before.hand, round: before.round,
        label: `Hand ${before.hand}, round ${before.round} (${PLACE[before.round]}): reveal` });
    }
    if (f.type === "match_ended" || f.type === "match_annulled") marks.push({ n: f.version, kind: "end", label: "The end" });
  });
  return marks;
}

export async function replayPage(root, matchId) {
  const base = `/api/matches/${encodeURIComponent(matchId)}`;
  let index;
  try {
    index = await api(`${base}/replay`);
  } catch (e) {
    fill(root, h("h1", {}, "Replay"), h("p", { class: "panel", id: "message" }, e.detail || String(e)));
    return;
  }
  const total = index.frames;
  const cache = new Map();
  const settled = new Map();
  const frame = (n) => {
    if (!cache.has(n)) {
      cache.set(n, api(`${base}/replay/frames/${n}`)
        .then((f) => { settled.set(n, f); return f; })
        .catch((e) => { cache.delete(n); throw e; }));
    }
    return cache.get(n);
  };
  const marks = jumpMarks(index.summary);
  const head = index.headers;
  for (const p of head.players) learn(p.id, p.name);
  const handsAllowed = !head.hide_hands_in_replay;
  const firstDeal = (marks.find((m) => m.kind === "deal") || { n: 1 }).n;
  // The reveals' frames, fetched ahead: a revealed pair shows what it gave.
  for (const m of marks) if (m.kind === "reveal") frame(m.n).catch(() => {});

  const params = new URLSearchParams(location.search);
  let at = Math.min(total, Math.max(1, Number(params.get("frame")) || firstDeal));
  let showHands = handsAllowed;
  let playing = 0;
  let speed = 1;
  let view = null;
  let event = null;
  // The odds after each frame, as a spectator could have judged them then: never
  // from the replay's own frames, which may show the hands.
  // A frame's odds are asked once; while the estimate is pending (404) asked again a
  // few times, a little later each time; then, or on any other refusal, the bar says
  // there are none for this frame (a state shown, never a loop of requests).
  const odds = new Map();
  const ODDS_TRIES = 4;
  const oddsAt = (n, tries = ODDS_TRIES) => {
    if (odds.has(n) && tries === ODDS_TRIES) return;
    odds.set(n, null);
    api(`${base}/win-probability?version=${n}`, { anonymous: true })
      .then((o) => { odds.set(n, o); if (at === n) draw(); })
      .catch((e) => {
        const pending = e.status === 404 && e.code === "estimate_pending" && tries > 1;
        if (pending) {
          setTimeout(() => oddsAt(n, tries - 1), 1000 * (ODDS_TRIES - tries + 1));
          return;
        }
        odds.set(n, { unavailable: e.status === 404 ? "not_estimated" : e.code || "failed" });
        if (at === n) draw();
      });
  };

  const scrub = h("input", { type: "range", id: "scrub", min: 1, max: total, value: at, "aria-label": "Frame",
    "aria-valuetext": `frame ${at} of ${total}`, oninput: (e) => go(Number(e.target.value)) });
  const pct = (n) => (total > 1 ? ((n - 1) / (total - 1)) * 100 : 0);
  const ticks = h("div", { class: "ticks", role: "group", "aria-label": "Hands and reveals" },
    marks.map((m) => h("button", { type: "button", class: `tick ${m.kind}`, style: `left:${pct(m.n)}%`,
      "data-frame": m.n, title: m.label, "aria-label": m.label, onclick: () => go(m.n) },
    m.kind === "deal" ? `H${m.hand}` : m.kind === "end" ? "end" : "")));
  const counter = h("output", { id: "frame-no", for: "scrub", "aria-live": "polite" });
  const playBtn = h("button", { class: "btn primary", id: "play", type: "button", onclick: () => toggle() }, "▶ Play");
  const jump = h("select", { id: "jump", "aria-label": "Jump to a hand or round", onchange: (e) => e.target.value && go(Number(e.target.value)) },
    h("option", { value: "" }, "Jump to…"), marks.map((m) => h("option", { value: m.n }, m.label)));
  const speedSel = h("select", { id: "speed", "aria-label": "Speed", onchange: (e) => { speed = Number(e.target.value); if (playing) { stop(); toggle(); } } },
    SPEEDS.map((s) => h("option", { value: s, selected: s === 1 }, `${s}×`)));
  const hands = h("input", { type: "checkbox", id: "show-hands", checked: showHands, disabled: !handsAllowed,
    onchange: (e) => { showHands = e.target.checked; draw(); } });
  const stage = h("div", { id: "stage" });
  const btn = (id, text, label, fn) => h("button", { class: "btn", id, type: "button", "aria-label": label, onclick: fn }, text);
  const rating = (p) => (p.rating_before != null && p.rating_after != null
    ? ` (${Math.round(p.rating_before)} → ${Math.round(p.rating_after)})` : "");

  fill(root,
    h("div", { class: "match-head" },
      h("h1", {}, "Replay: ", head.players.map((p, i) => [i ? h("span", { class: "vs" }, " vs ") : null, playerLink(p.id, p.name || nameOf(p.id))])),
      h("button", { class: "btn", type: "button", id: "share", onclick: async () => {
        try { await navigator.clipboard.writeText(location.href); toast("Link to this frame copied."); } catch { toast(location.href); }
      } }, "Copy link to this frame")),
    h("p", { id: "headline", class: "muted" }, head.players.map((p) => `${p.name || nameOf(p.id)}${rating(p)}`).join(" vs "),
      head.ladder ? ` · ${head.ladder}` : "", ` · ${head.date} · ${head.result}`, head.reason ? ` (${head.reason.replace("_", " ")})` : ""),
    verifiedBadge(matchId, receiptsOf(matchId)),
    h("div", { class: "controls", role: "group", "aria-label": "Replay controls" },
      btn("first", "|◀", "First frame", () => go(1)),
      btn("back", "◀", "Step back", () => go(at - 1)),
      playBtn,
      btn("forward", "▶", "Step forward", () => go(at + 1)),
      btn("last", "▶|", "Last frame", () => go(total)),
      speedSel, jump,
      h("label", { class: "check" }, hands, handsAllowed ? " Show hands" : " Hands hidden by the ladder")),
    h("div", { class: "scrubber" }, h("div", { class: "track" }, ticks, scrub), counter),
    stage);

  function stop() { clearInterval(playing); playing = 0; playBtn.textContent = "▶ Play"; }
  function toggle() {
    if (playing) { stop(); return; }
    if (at >= total) go(1);
    playBtn.textContent = "‖ Pause";
    playing = setInterval(() => { if (at >= total) stop(); else go(at + 1); }, 900 / speed);
  }

  let want = 0;
  async function go(n) {
    n = Math.min(total, Math.max(1, n));
    at = n;
    want = n;
    scrub.value = String(n);
    scrub.setAttribute("aria-valuetext", `frame ${n} of ${total}`);
    counter.textContent = `frame ${n} of ${total}`;
    for (const t of ticks.children) t.classList.toggle("here", Number(t.dataset.frame) === n);
    const url = new URL(location.href);
    url.searchParams.set("frame", String(n));
    history.replaceState(null, "", url);
    try {
      const f = await frame(n);
      if (want !== n) return;       // a later step overtook this one
      view = f.view;
      event = f.event;
      draw();
      frame(Math.min(total, n + 1)).catch(() => {});
    } catch (e) {
      stop();
      toast(e.detail || String(e), "error");
    }
  }

  function revealsUpTo(n, hand) {
    const found = {};
    for (const m of marks) {
      const f = settled.get(m.n);
      if (m.kind === "reveal" && m.n <= n && f && f.event.hand === hand) found[`${f.event.hand}:${f.event.round}`] = f.event;
    }
    if (view.last_reveal) found[`${view.last_reveal.hand}:${view.last_reveal.round}`] = view.last_reveal;
    return found;
  }

  function draw() {
    if (!view) return;
    const shown = showHands ? view : withoutHands(view);
    const reveal = view.last_reveal && view.last_reveal.hand === view.hand ? view.last_reveal : null;
    const reveals = revealsUpTo(at, view.hand);
    oddsAt(at);
    fill(stage,
      view.result && at === total ? null : oddsBar(odds.get(at), view.seats.map((s) => nameOf(s.player))),
      h("p", { class: "status", id: "status" }, status(view)),
      event ? h("p", { id: "what", "data-type": event.type, "data-hand": event.hand ?? "", "data-round": event.round ?? "" },
        `Frame ${at}: ${describe(event, view, reveals)}`) : null,
      view.result ? h("p", { class: "result", id: "result", "data-winner": view.result.winner ?? "none" }, explainEnd(view, nameOf)) : null,
      h("div", { class: "match-grid" },
        h("div", { class: "board" }, renderTable(shown, { interactive: false, reveals, fresh: event && event.type === "round_revealed" ? `${event.hand}:${event.round}` : null })),
        h("aside", { class: "side", "aria-label": "What happened" }, reveal ? revealPanel(reveal, view) : null)));
  }

  root.addEventListener("keydown", (e) => {
    if (["INPUT", "SELECT", "BUTTON", "A"].includes(e.target.tagName)) return;
    const keys = { ArrowLeft: () => go(at - 1), ArrowRight: () => go(at + 1), Home: () => go(1), End: () => go(total), " ": toggle };
    if (keys[e.key]) { e.preventDefault(); keys[e.key](); }
  });
  await go(at);
}
