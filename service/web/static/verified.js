// What the player sees of the browser's own checks (evidence.js): each receipt
// checked as it arrives against the service's keys (pinned in this browser at first
// sight), and, once the match is over, its whole record verified here — chain,
// signatures, seed commitment and every deal — with a verdict on the end screen and
// in the replay ("verified in your browser"). No verdict of the service is trusted.
import { api } from "./api.js";
import { h, toast } from "./dom.js";
import { consistencyProblem, keyring, pinKeys, receiptProblem, verifyRecord } from "./evidence.js";

let keysOnce = null;
/** The keys to verify with: /api/keys, pinned per service (this origin) at first sight. */
function pinnedKeys() {
  if (!keysOnce) {
    keysOnce = api("/api/keys", { anonymous: true })
      .then((published) => pinKeys(location.origin, published))
      .catch((e) => { keysOnce = null; throw e; });
  }
  return keysOnce;
}

const canVerify = () => !!(globalThis.crypto && globalThis.crypto.subtle);
const arrived = new Map(); // matchId -> {ok, bad}

/** Check one receipt as it arrives (a command's answer, a seat's frame); warn if it fails. */
export async function checkArriving(matchId, receipt) {
  if (!receipt || !canVerify()) return;
  const tally = arrived.get(matchId) || { ok: 0, bad: 0 };
  arrived.set(matchId, tally);
  try {
    const { keys } = await pinnedKeys();
    const problem = await receiptProblem(receipt, await keyring(keys));
    if (problem) {
      tally.bad += 1;
      toast(`The service's receipt does not verify in your browser: ${problem.detail}`, "error");
    } else tally.ok += 1;
  } catch { /* keys unreachable now: the record's check at the end covers every receipt kept */ }
}

const SEEN = "matcha.seen-checkpoint";
const signedPart = (c) => JSON.stringify([c.origin, c.sequence, c.tree_size, c.root, c.history_size, c.history_root, c.signature]);

/**
 * The checkpoint this browser last saw (per service) against `current`, one the
 * record carries: the later must extend the earlier (an RFC 9162 consistency proof
 * from /api/checkpoints/consistency, checked here), and two of one sequence must
 * be the same. Keeps the later as the one last seen. {checked} or {problem}.
 */
async function extendsSeen(current, ring) {
  if (!current || current.format !== "matcha-checkpoint/2") return {};
  let all = {};
  try { all = JSON.parse(localStorage.getItem(SEEN) || "{}"); } catch { all = {}; }
  const seen = all[location.origin];
  const keep = (c) => { all[location.origin] = c; try { localStorage.setItem(SEEN, JSON.stringify(all)); } catch { /* full */ } };
  if (!seen || seen.origin !== current.origin) { keep(current); return {}; }
  if (seen.sequence === current.sequence) {
    return signedPart(seen) === signedPart(current) ? {}
      : { problem: { code: "not_consistent", detail: `two different checkpoints ${current.sequence}: the one you saw earlier and this record's` } };
  }
  const [first, second] = seen.sequence < current.sequence ? [seen, current] : [current, seen];
  let proof;
  try {
    proof = await api(`/api/checkpoints/consistency?first=${first.sequence}&second=${second.sequence}`, { anonymous: true });
  } catch (e) {
    return { problem: { code: "not_consistent", detail: `no consistency proof from checkpoint ${first.sequence} to ${second.sequence}: ${e.detail || e}` } };
  }
  if (signedPart(proof.first) !== signedPart(first) || signedPart(proof.second) !== signedPart(second)) {
    return { problem: { code: "not_consistent", detail: "the consistency proof is not between the checkpoints this browser holds" } };
  }
  const problem = await consistencyProblem(proof, ring);
  if (problem) return { problem };
  keep(second);
  return { checked: `checkpoint ${second.sequence} extends checkpoint ${first.sequence}, which this browser saw earlier` };
}

const verdicts = new Map(); // matchId -> Promise of the verdict

function verdictOf(matchId, receipts) {
  if (!verdicts.has(matchId)) {
    verdicts.set(matchId, (async () => {
      if (!canVerify()) return { ok: null, why: "this page is not a secure context (HTTPS), so WebCrypto is unavailable" };
      let record;
      try {
        record = await api(`/api/matches/${encodeURIComponent(matchId)}/record`);
      } catch (e) {
        verdicts.delete(matchId); // not exportable to this viewer (or not yet): ask again next time
        return { ok: null, why: e.detail || String(e) };
      }
      const { keys, dropped } = await pinnedKeys();
      const verdict = await verifyRecord(record, { keys, receipts });
      if (verdict.ok && record.checkpoint) {
        const seen = await extendsSeen(record.checkpoint.checkpoint, await keyring(keys));
        if (seen.checked) verdict.checked.push(seen.checked);
        if (seen.problem) { verdict.problems.push(seen.problem); verdict.ok = false; }
      }
      return { ...verdict, dropped };
    })());
  }
  return verdicts.get(matchId);
}

function render(el, v) {
  el.dataset.verdict = v.ok === true ? "ok" : v.ok === false ? "fail" : "unchecked";
  el.replaceChildren();
  if (v.ok === true) {
    el.append(h("b", {}, "✓ Verified in your browser"),
      ` — ${v.checked.join("; ")} (${Math.round(v.ms)} ms, with the service's keys pinned in this browser).`);
    if (v.dropped && v.dropped.length) el.append(h("span", { class: "muted" }, ` The service no longer lists key ${v.dropped.join(", ")}, pinned here earlier.`));
  } else if (v.ok === false) {
    el.append(h("b", {}, "✗ Not verified in your browser"), `: ${v.problems.length} problem(s).`,
      h("ul", { class: "problems" }, v.problems.map((p) => h("li", { "data-code": p.code }, `${p.code}: ${p.detail}`))));
  } else {
    el.append(h("span", { class: "muted" }, `Not checked in your browser: ${v.why}.`));
  }
}

/**
 * The verdict of this browser on a finished match's record, as an element
 * (#verified). `receipts`: those this browser kept for the match (each must hold).
 * Made again on every redraw; the check itself runs once per match.
 */
export function verifiedBadge(matchId, receipts = []) {
  const el = h("p", { class: "panel verified", id: "verified", role: "status", "data-verdict": "pending" },
    "Checking the record in your browser…");
  verdictOf(matchId, receipts).then((v) => render(el, v))
    .catch((e) => render(el, { ok: null, why: String(e && e.message ? e.message : e) }));
  return el;
}
