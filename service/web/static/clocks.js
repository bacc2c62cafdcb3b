// Both seats' clocks (docs/clocks.md). The service measures them (view.clocks:
// each seat's remaining_ms at measured_at, and which one is running); here they
// only count down between two views, from the instant the view arrived (the
// browser's clock may differ from the server's; the next view corrects it).
import { h } from "./dom.js";

export const SHORT_MS = 10_000;   // below this, a running clock is marked short

export function timeControlText(clock) {
  if (!clock) return "untimed";
  if (clock.kind === "real_time") {
    const base = clock.base_s >= 60 && clock.base_s % 60 === 0 ? `${clock.base_s / 60} min` : `${clock.base_s} s`;
    return `${base} + ${clock.increment_s || 0} s`;
  }
  const d = clock.per_move_s;
  return d % 86400 === 0 ? `${d / 86400} d per move` : d % 3600 === 0 ? `${d / 3600} h per move` : `${d} s per move`;
}

export function formatMs(ms) {
  const s = Math.max(0, Math.ceil(ms / 1000));
  if (s >= 86400) return `${Math.floor(s / 86400)} d ${Math.floor((s % 86400) / 3600)} h`;
  if (s >= 3600) return `${Math.floor(s / 3600)} h ${String(Math.floor((s % 3600) / 60)).padStart(2, "0")} m`;
  return `${Math.floor(s / 60)}:${String(s % 60).padStart(2, "0")}`;
}

/** Remaining ms of a seat's clock now, counted down since the view arrived. */
export function remaining(seatClock, receivedAt, now = Date.now()) {
  return seatClock.running ? Math.max(0, seatClock.remaining_ms - (now - receivedAt)) : seatClock.remaining_ms;
}

/** The clocks bar: one clock per seat, with the player's name. */
export function clockBar(clocks, names, receivedAt) {
  if (!clocks) return null;
  return h("div", { class: "clocks", id: "clocks", "aria-label": `Clocks, ${timeControlText(clocks.control)}` },
    clocks.seats.map((c) => {
      const left = remaining(c, receivedAt);
      const short = c.running && left < SHORT_MS;
      return h("span", { class: `clock${c.running ? " running" : ""}${short ? " short" : ""}`,
        "data-seat": c.seat, "data-ms": String(left), role: "timer",
        title: c.first_move ? "time for a first move: if it runs out the match is aborted, unrated" : null },
      h("span", { class: "clock-name" }, names[c.seat]), " ",
      h("b", { class: "clock-time" }, formatMs(left)),
      short ? h("span", { class: "clock-warn" }, " low time!") : null);
    }));
}

/** Update the clocks bar's times in place (every tick, between two views). */
export function tickClocks(root, clocks, receivedAt) {
  if (!clocks) return;
  for (const c of clocks.seats) {
    const el = root.querySelector(`.clock[data-seat="${c.seat}"]`);
    if (!el) continue;
    const left = remaining(c, receivedAt);
    el.dataset.ms = String(left);
    const t = el.querySelector(".clock-time");
    if (t) t.textContent = formatMs(left);
    const short = c.running && left < SHORT_MS;
    if (short !== el.classList.contains("short")) {
      el.classList.toggle("short", short);
      if (short && !el.querySelector(".clock-warn")) el.append(h("span", { class: "clock-warn" }, " low time!"));
    }
  }
}
