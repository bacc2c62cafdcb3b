// Player ids to names, and names as links to player pages. Views carry ids only:
// names are learnt from ladders, leaderboards and replay headers, and the rest are
// asked for in one batch (GET /api/players?ids=).
import { api, auth } from "./api.js";
import { h } from "./dom.js";

const cache = new Map();

export function learn(id, name) {
  if (id && name) cache.set(id, name);
}

export const nameOf = (id) => cache.get(id) || (id ? `player ${String(id).slice(0, 6)}` : "?");

/** Learn every name of `ids` not known yet, in one request (best effort). */
export async function learnIds(ids) {
  const me = auth.me;
  if (me) learn(me.id, me.name);
  const missing = [...new Set(ids.filter((id) => id && !cache.has(id)))];
  if (!missing.length) return;
  try {
    const found = await api(`/api/players?ids=${missing.map(encodeURIComponent).join(",")}`, { anonymous: true });
    for (const p of found) learn(p.id, p.name);
  } catch { /* names stay short ids */ }
}

/** A player's name as a link to their page. */
export const playerLink = (id, text = nameOf(id)) =>
  h("a", { class: "who-link", href: `/player/${encodeURIComponent(id)}`, "data-player": id }, text);

/** Learn the members of a ladder (best effort). */
export async function learnLadder(ladderId) {
  if (!ladderId) return [];
  try {
    const members = await api(`/api/ladders/${encodeURIComponent(ladderId)}/members`, { anonymous: true });
    for (const m of members) learn(m.player_id, m.name);
    return members;
  } catch {
    return [];
  }
}

const bots = new Set();
let botsAsked = null;

/** The bots' player ids (GET /api/bots, once, best effort). A bot plays from the
 * server and never opens the match's socket, so presence never counts it: it is
 * never "away", and a practice match must not say it left. */
export function learnBots() {
  botsAsked ||= api("/api/bots", { anonymous: true })
    .then((list) => { for (const b of list) bots.add(b.player_id); })
    .catch(() => { botsAsked = null; });
  return botsAsked;
}

export const isBot = (id) => bots.has(id);

/** Learn the names of a match's players, and which of them are bots. */
export const learnMatch = (ids) => Promise.all([learnIds(ids), learnBots()]);
