// A player's receipts: the service's signatures of the match log at each version
// they were answered or shown (docs/audit.md "Receipts"). Kept in this browser
// (localStorage, per match) so a player holds evidence the service cannot take
// back, and offered as a file that `matcha verify RECORD RECEIPTS` checks offline.
// Each is checked in this browser as it arrives (verified.js).
import { h } from "./dom.js";
import { checkArriving } from "./verified.js";

const KEY = (matchId) => `matcha.receipts.${matchId}`;
const MAX = 400;

export function receiptsOf(matchId) {
  try { return JSON.parse(localStorage.getItem(KEY(matchId)) || "[]"); } catch { return []; }
}

/** Keep a receipt (from a command's answer or a seat's live frame); one per version. */
export function keepReceipt(matchId, receipt) {
  if (!receipt || !receipt.signature) return;
  checkArriving(matchId, receipt);
  const held = receiptsOf(matchId).filter((r) => r.version !== receipt.version);
  held.push(receipt);
  held.sort((a, b) => a.version - b.version);
  try { localStorage.setItem(KEY(matchId), JSON.stringify(held.slice(-MAX))); } catch { /* storage full: keep playing */ }
}

/** A link that downloads the receipts held for this match (nothing when none). */
export function receiptsLink(matchId) {
  const held = receiptsOf(matchId);
  if (!held.length) return null;
  const href = `data:application/json,${encodeURIComponent(JSON.stringify(held, null, 1))}`;
  return h("a", { class: "btn small", id: "receipts", href, download: `receipts-${matchId}.json`,
    title: "The service's signed receipts of this match, kept in this browser: check them with `matcha verify`" },
  `My receipts (${held.length})`);
}
