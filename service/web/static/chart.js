// Rating charts, hand-drawn SVG (no chart library): a sparkline for tables, and
// a full chart with axes, values and (Glicko-2) the uncertainty band.
import { h } from "./dom.js";

/** points: ratings oldest first. */
export function ratingChart(points, { width = 120, height = 32 } = {}) {
  const label = points.length
    ? `Rating history: ${Math.round(points[0])} to ${Math.round(points.at(-1))} over ${points.length - 1} match${points.length === 2 ? "" : "es"}`
    : "No rated matches yet";
  const svg = h("svg:svg", { class: "chart", viewBox: `0 0 ${width} ${height}`, role: "img", "aria-label": label,
    "data-points": points.length });
  if (points.length < 2) {
    svg.append(h("svg:line", { x1: 2, x2: width - 2, y1: height / 2, y2: height / 2, stroke: "#8a8578", "stroke-dasharray": "3 3" }));
    return svg;
  }
  const lo = Math.min(...points);
  const hi = Math.max(...points);
  const span = hi - lo || 1;
  const pad = 3;
  const x = (i) => pad + (i * (width - 2 * pad)) / (points.length - 1);
  const y = (r) => height - pad - ((r - lo) * (height - 2 * pad)) / span;
  const d = points.map((r, i) => `${i ? "L" : "M"}${x(i).toFixed(1)} ${y(r).toFixed(1)}`).join("");
  svg.append(h("svg:path", { d }), h("svg:circle", { cx: x(points.length - 1), cy: y(points.at(-1)), r: 2.5 }));
  return svg;
}

/** Round tick values covering [lo, hi]: about `n` of them. */
export function ticks(lo, hi, n = 5) {
  const raw = (hi - lo) / Math.max(1, n - 1) || 1;
  const mag = 10 ** Math.floor(Math.log10(raw));
  const step = [1, 2, 5, 10].map((m) => m * mag).find((s) => s >= raw) || raw;
  const out = [];
  for (let v = Math.floor(lo / step) * step; v <= hi + step / 2; v += step) out.push(v);
  return out;
}

/**
 * history: [{game, before, after, rd_before?, rd_after?, opponent_name, result}],
 * oldest first. The line starts at the first game's `before` (game 0).
 */
export function historyChart(history, { width = 640, height = 240, title = "Rating" } = {}) {
  if (!history.length) return h("p", { class: "muted" }, "No rated match on this ladder yet.");
  const pts = [{ game: 0, r: history[0].before, rd: history[0].rd_before ?? null, label: "start" },
    ...history.map((e) => ({ game: e.game, r: e.after, rd: e.rd_after ?? null,
      label: `game ${e.game}: ${e.result} vs ${e.opponent_name || "?"}, ${Math.round(e.before)} → ${Math.round(e.after)}` }))];
  const band = pts.every((p) => p.rd != null);
  const lows = pts.map((p) => p.r - (band ? 2 * p.rd : 0));
  const highs = pts.map((p) => p.r + (band ? 2 * p.rd : 0));
  const yt = ticks(Math.min(...lows), Math.max(...highs));
  const [lo, hi] = [yt[0], yt.at(-1)];
  const m = { l: 48, r: 12, t: 12, b: 32 };
  const last = pts.at(-1).game || 1;
  const x = (g) => m.l + (g / last) * (width - m.l - m.r);
  const y = (r) => height - m.b - ((r - lo) / (hi - lo || 1)) * (height - m.t - m.b);
  const xt = ticks(0, last, Math.min(8, last + 1)).filter((g) => Number.isInteger(g) && g <= last);
  const first = Math.round(pts[0].r);
  const now = Math.round(pts.at(-1).r);
  const svg = h("svg:svg", { class: "history", viewBox: `0 0 ${width} ${height}`, role: "img",
    "aria-label": `${title}: ${first} to ${now} over ${history.length} match${history.length === 1 ? "" : "es"}${band ? `, ±${Math.round(2 * pts.at(-1).rd)} now` : ""}`,
    "data-points": pts.length },
  h("svg:g", { class: "grid" }, yt.map((v) => [
    h("svg:line", { x1: m.l, x2: width - m.r, y1: y(v), y2: y(v) }),
    h("svg:text", { x: m.l - 6, y: y(v) + 4, "text-anchor": "end" }, String(Math.round(v)))])),
  h("svg:g", { class: "axis" },
    h("svg:line", { x1: m.l, x2: width - m.r, y1: height - m.b, y2: height - m.b }),
    xt.map((g) => h("svg:text", { x: x(g), y: height - m.b + 16, "text-anchor": "middle" }, String(g))),
    h("svg:text", { x: (m.l + width - m.r) / 2, y: height - 2, "text-anchor": "middle", class: "label" }, "games played")),
  band ? h("svg:path", { class: "band", d: `${pts.map((p, i) => `${i ? "L" : "M"}${x(p.game).toFixed(1)} ${y(p.r + 2 * p.rd).toFixed(1)}`).join("")}${
    [...pts].reverse().map((p) => `L${x(p.game).toFixed(1)} ${y(p.r - 2 * p.rd).toFixed(1)}`).join("")}Z` }) : null,
  h("svg:path", { class: "line", d: pts.map((p, i) => `${i ? "L" : "M"}${x(p.game).toFixed(1)} ${y(p.r).toFixed(1)}`).join("") }),
  pts.map((p) => h("svg:circle", { cx: x(p.game), cy: y(p.r), r: 3.5, class: "pt" }, h("svg:title", {}, p.label))),
  // Each point's value where there is room for it; the latest is always labelled below.
  pts.length <= 16 ? pts.slice(0, -1).map((p) => h("svg:text", { x: x(p.game), y: y(p.r) - 8, "text-anchor": "middle", class: "val" }, String(Math.round(p.r)))) : null,
  h("svg:text", { x: x(pts.at(-1).game), y: y(pts.at(-1).r) - 8, "text-anchor": "end", class: "now" }, String(now)));
  return svg;
}

/** A rating as shown: "1512", "1512 ±96" where the API gives the uncertainty (2 RD). */
export function ratingText(s) {
  if (s.rating == null) return "—";
  const rd = s.rd != null ? ` ±${Math.round(2 * s.rd)}` : "";
  return `${Math.round(s.rating)}${rd}${s.provisional ? "?" : ""}`;
}
