// Player ids to names. Views carry ids only; ladder member lists,
// leaderboards and replay headers teach us names as we meet them.
import { api, auth } from "./api.js";

const cache = new Map();

export function learn(id, name) {
  if (id && name) cache.set(id, name);
}

export const nameOf = (id) => cache.get(id) || (id ? `player ${String(id).slice(0, 6)}` : "?");

/** Learn the members of a ladder (best effort). */
export async function learnLadder(ladderId) {
  if (!ladderId) return [];
  try {
    const members = await api(`/api/ladders/${encodeURIComponent(ladderId)}/members`, { anonymous: true });
    for (const m of members) learn(m.player_id, m.name);
    return members;
  } catch {
    return [];   // names stay short ids
  }
}

/** Learn the names of a match's players through its ladder (named by its first event). */
export async function learnMatch(created, ids) {
  const me = auth.me;
  if (me) learn(me.id, me.name);
  if (created && !ids.every((id) => cache.has(id))) await learnLadder(created.ladder_id);
}
