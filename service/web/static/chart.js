// A rating history as a small hand-drawn SVG line (no chart library).
import { h } from "./dom.js";

/** points: ratings oldest first. */
export function ratingChart(points, { width = 120, height = 32 } = {}) {
  const label = points.length
    ? `Rating history: ${Math.round(points[0])} to ${Math.round(points.at(-1))} over ${points.length - 1} match${points.length === 2 ? "" : "es"}`
    : "No rated matches yet";
  const svg = h("svg:svg", { class: "chart", viewBox: `0 0 ${width} ${height}`, role: "img", "aria-label": label,
    "data-points": points.length });
  if (points.length < 2) {
    svg.append(h("svg:line", { x1: 2, x2: width - 2, y1: height / 2, y2: height / 2, stroke: "#bbb", "stroke-dasharray": "3 3" }));
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
