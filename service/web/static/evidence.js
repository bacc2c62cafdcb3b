// The evidence of a match checked in this browser, written from docs/evidence-spec.md
// alone: the hash chain and the bytes of every event (§2, §3), the seed commitment and
// every deal (§4), the service's receipts (§5) and its checkpoint proof (§6). WebCrypto
// gives SHA-256 and Ed25519; nothing here trusts the service's own verdict.
// Every problem carries the spec's reason code (`hash_mismatch`, `deal_mismatch`, …):
// the suite runs this module on docs/evidence-vectors/ in Chromium.
import { FIELDS } from "./evidence_fields.js";

const utf8 = new TextEncoder();
const subtle = () => globalThis.crypto.subtle;

export class EvidenceProblem extends Error {
  constructor(code, detail) { super(detail); this.code = code; this.detail = detail; }
}

// ---- bytes -------------------------------------------------------------------------

export function hexOf(bytes) {
  return Array.from(bytes, (b) => b.toString(16).padStart(2, "0")).join("");
}

export function bytesOfHex(hex) {
  if (typeof hex !== "string" || hex.length % 2 || /[^0-9a-f]/.test(hex)) throw new EvidenceProblem("not_hex", `not lower-case hex: ${String(hex).slice(0, 20)}`);
  const out = new Uint8Array(hex.length / 2);
  for (let i = 0; i < out.length; i += 1) out[i] = parseInt(hex.slice(2 * i, 2 * i + 2), 16);
  return out;
}

function bytesOfBase64(text) {
  let raw;
  try { raw = atob(text); } catch { throw new EvidenceProblem("bad_signature", "a signature or key that is not base64"); }
  return Uint8Array.from(raw, (c) => c.charCodeAt(0));
}

function concat(...parts) {
  const out = new Uint8Array(parts.reduce((n, p) => n + p.length, 0));
  let at = 0;
  for (const p of parts) { out.set(p, at); at += p.length; }
  return out;
}

const u32 = (n) => new Uint8Array([(n >>> 24) & 255, (n >>> 16) & 255, (n >>> 8) & 255, n & 255]);
const text = (s) => (typeof s === "string" ? utf8.encode(s) : s);
/** field(x) = u32be(len(x)) || x (§0). */
const field = (x) => { const b = text(x); return concat(u32(b.length), b); };
const equal = (a, b) => a.length === b.length && a.every((x, i) => x === b[i]);

export async function sha256(bytes) {
  return new Uint8Array(await subtle().digest("SHA-256", text(bytes)));
}

// ---- §3 the bytes of an event --------------------------------------------------------

const ESCAPES = { 8: "\\b", 9: "\\t", 10: "\\n", 12: "\\f", 13: "\\r" };

function jsonString(s) {
  let out = "\"";
  for (const ch of s) {
    const c = ch.codePointAt(0);
    if (ch === "\"") out += "\\\"";
    else if (ch === "\\") out += "\\\\";
    else if (c < 0x20) out += ESCAPES[c] || `\\u${c.toString(16).padStart(4, "0")}`;
    else out += ch;
  }
  return `${out}"`;
}

/** §3 rule 7: the shortest round-trip digits, plain for -5 <= e < 16 (with ".0"), else d.ddde<exp>. */
export function jsonFloat(x) {
  if (!Number.isFinite(x)) throw new EvidenceProblem("not_canonical", "a float that is not finite");
  if (x === 0) return Object.is(x, -0) ? "-0.0" : "0.0";
  const [mantissa, expText] = x.toExponential().split("e");
  const sign = mantissa.startsWith("-") ? "-" : "";
  const digits = mantissa.replace("-", "").replace(".", "");
  const e = Number(expText);
  if (e < -5 || e >= 16) return `${sign}${digits[0]}${digits.length > 1 ? `.${digits.slice(1)}` : ""}e${e}`;
  if (e < 0) return `${sign}0.${"0".repeat(-e - 1)}${digits}`;
  const whole = digits.slice(0, e + 1).padEnd(e + 1, "0");
  return `${sign}${whole}.${digits.slice(e + 1) || "0"}`;
}

const notCanonical = (detail) => new EvidenceProblem("not_canonical", detail);

function member(value, types) {
  // Which type of a union the value is: by its JSON kind, a struct by its tag.
  for (const t of types) {
    if (value === null && t === "null") return t;
    if (typeof value === "string" && t === "string") return t;
    if (typeof value === "boolean" && t === "boolean") return t;
    if (typeof value === "number" && t === "integer" && Number.isInteger(value)) return t;
    if (typeof value === "number" && t === "float") return t;
    if (Array.isArray(value) && (t.tuple || t.array)) return t;
    if (value && typeof value === "object" && !Array.isArray(value) && t.struct) {
      const s = FIELDS[t.struct];
      if (!s.tag_field || value[s.tag_field] === s.tag) return t;
    }
  }
  throw notCanonical(`a value of none of its types: ${JSON.stringify(value)}`);
}

function encode(value, type) {
  if (typeof type === "object" && type.union) return encode(value, member(value, type.union));
  switch (type) {
    case "string": if (typeof value !== "string") break; return jsonString(value);
    case "integer": if (!Number.isSafeInteger(value)) break; return String(value);
    case "float": if (typeof value !== "number") break; return jsonFloat(value);
    case "boolean": if (typeof value !== "boolean") break; return String(value);
    case "null": if (value !== null) break; return "null";
    default:
      if (type.struct) return encodeStruct(value, FIELDS[type.struct]);
      if (type.tuple && Array.isArray(value) && value.length === type.tuple.length) {
        return `[${value.map((v, i) => encode(v, type.tuple[i])).join(",")}]`;
      }
      if (type.array && Array.isArray(value)) return `[${value.map((v) => encode(v, type.array)).join(",")}]`;
  }
  throw notCanonical(`${JSON.stringify(value)} is not a ${JSON.stringify(type)}`);
}

function encodeStruct(value, spec) {
  if (!value || typeof value !== "object" || Array.isArray(value)) throw notCanonical(`not a ${spec.name} object`);
  const known = new Set(spec.fields.map((f) => f.name));
  if (spec.tag_field) known.add(spec.tag_field);
  for (const k of Object.keys(value)) if (!known.has(k)) throw notCanonical(`${spec.name} has no key ${k}`);
  const parts = spec.tag_field ? [`${jsonString(spec.tag_field)}:${jsonString(spec.tag)}`] : [];
  for (const f of spec.fields) {
    if (!(f.name in value)) {
      if (f.presence === "unset") continue;
      throw notCanonical(`${spec.name} lacks its key ${f.name}`);
    }
    parts.push(`${jsonString(f.name)}:${encode(value[f.name], f.type)}`);
  }
  return `{${parts.join(",")}}`;
}

const EVENT_SPECS = Object.fromEntries(Object.values(FIELDS).filter((s) => s.tag_field === "type").map((s) => [s.tag, s]));

/** An event's chain bytes (§3) as text; throws EvidenceProblem("not_canonical") on anything else. */
export function eventBytes(event) {
  const spec = event && EVENT_SPECS[event.type];
  if (!spec) throw notCanonical(`unknown event type ${event && JSON.stringify(event.type)}`);
  return encodeStruct(event, spec);
}

// ---- §2 the chain --------------------------------------------------------------------

export const GENESIS = "0".repeat(64);

export function canonicalBytes(row, bytesOfEvent) {
  return concat(utf8.encode("matcha-event-chain-v1"), field(row.match_id), field(String(row.version)),
    field(row.actor), field(row.recorded_at), field(bytesOfEvent));
}

/** The hash of a row (hex) from its previous hash (hex) and its event. */
export async function chainHash(row, event) {
  return hexOf(await sha256(concat(bytesOfHex(row.prev_hash), canonicalBytes(row, eventBytes(event)))));
}

// ---- §1 keys -------------------------------------------------------------------------

/** The keyring of published keys ({format, keys} or a list): key ids checked against the bytes. */
export async function keyring(published) {
  const list = Array.isArray(published) ? published : (published && published.keys) || [];
  const ring = new Map();
  for (const k of list) {
    if ((k.algorithm || "ed25519") !== "ed25519") continue;
    const raw = bytesOfBase64(k.public_key);
    if (hexOf(await sha256(raw)).slice(0, 16) !== k.key_id) throw new EvidenceProblem("bad_key", `key ${k.key_id}: the id is not the hash of the key`);
    ring.set(k.key_id, { published: k, key: await subtle().importKey("raw", raw, { name: "Ed25519" }, false, ["verify"]) });
  }
  return ring;
}

async function signedBy(ring, keyId, message, signatureB64) {
  const held = ring.get(keyId);
  if (!held) throw new EvidenceProblem("unknown_key", `signed by key ${keyId}, which the service's keyring does not hold`);
  const sig = bytesOfBase64(signatureB64);
  if (sig.length !== 64 || !(await subtle().verify({ name: "Ed25519" }, held.key, sig, message))) {
    throw new EvidenceProblem("bad_signature", `the signature does not verify with key ${keyId}`);
  }
}

// ---- §5 receipts ---------------------------------------------------------------------

function seedBytes(seed) {
  if (!seed) return new Uint8Array(0);
  return /^([0-9a-fA-F]{2})*$/.test(seed) ? bytesOfHex(seed.toLowerCase()) : utf8.encode(seed);
}

export const headSalt = (seed) => sha256(concat(utf8.encode("matcha-head-salt-v1"), seedBytes(seed)));
export const blinded = async (salt, hashHex) => hexOf(await sha256(concat(utf8.encode("matcha-head-blind-v1"), salt, bytesOfHex(hashHex))));

export function headMessage(r) {
  return concat(utf8.encode("matcha-signed-head-v1"), field(r.key_id), field(r.match_id), field(String(r.version)),
    field(bytesOfHex(r.blinded_hash)), field(r.server_time));
}

/** A receipt as it arrives: null when the service signed it, else the problem ({code, detail}). */
export async function receiptProblem(receipt, ring) {
  try {
    if (!receipt || receipt.format !== "matcha-receipt/1") throw new EvidenceProblem("bad_receipt", "not a matcha-receipt/1");
    await signedBy(ring, receipt.key_id, headMessage(receipt), receipt.signature);
    return null;
  } catch (e) {
    if (e instanceof EvidenceProblem) return { code: e.code, detail: `receipt of version ${receipt && receipt.version}: ${e.detail}` };
    throw e;
  }
}

/** A receipt against the finished record's hashes (version -> hex) and salt. */
async function receiptAgainst(receipt, hashes, salt, what) {
  const hash = hashes.get(receipt.version);
  if (hash === undefined) {
    return { code: "events_removed", detail: `${what} shows the log reached version ${receipt.version}, but the record ends at version ${Math.max(0, ...hashes.keys())}: events were removed` };
  }
  if ((await blinded(salt, hash)) !== receipt.blinded_hash) {
    return { code: "receipt_mismatch", detail: `${what} signs another version ${receipt.version} than the record's: the log was rewritten` };
  }
  return null;
}

// ---- §4 seed, commitment, deal -------------------------------------------------------

export const CARDS = ["M1", "M2", "M3", "M4", "C1", "C2", "C3", "C4", "W1", "W2", "W3", "W4", "S1", "S2", "S3", "S4", "Z1", "Z2"];

export async function binding(created) {
  return sha256(concat(utf8.encode("matcha-match-binding-v1"), field(created.match_id), field(created.players[0]),
    field(created.players[1]), field(created.ladder_id || ""), field(encode(created.ruleset, { struct: "Ruleset" })),
    field(String(created.first_dealer))));
}

/** The commitment the seed (hex) gives under the match's scheme (null: unknown scheme). */
export async function commitment(created, seedHex) {
  const seed = bytesOfHex(seedHex);
  if (created.dealing_scheme === "matcha-deal-v2") return hexOf(await sha256(concat(utf8.encode("matcha-deal-v2"), seed, await binding(created))));
  if (created.dealing_scheme === "matcha-deal-v1") return hexOf(await sha256(seed));
  return null;
}

async function shuffle(cards, prefix, hand, s) {
  let block = 0;
  let words = [];
  const next = async () => {
    if (!words.length) {
      const d = await sha256(concat(prefix, u32(hand), u32(s), u32(block)));
      block += 1;
      const view = new DataView(d.buffer);
      words = Array.from({ length: 8 }, (_, i) => view.getUint32(4 * i, false));
    }
    return words.shift();
  };
  for (let i = cards.length - 1; i > 0; i -= 1) {
    const n = i + 1;
    const limit = 2 ** 32 - (2 ** 32 % n);
    let x = await next();
    while (x >= limit) x = await next(); // rejection sampling: no modulo bias
    const j = x % n;
    [cards[i], cards[j]] = [cards[j], cards[i]];
  }
}

/** Hand `hand` dealt by `dealer` from the seed (hex), with each seat's kept cards (§4). */
export async function deal(seedHex, hand, dealer, kept = [[], []], handSize = 5) {
  const prefix = concat(utf8.encode("matcha-deal-v1"), bytesOfHex(seedHex));
  const held = new Set([...kept[0], ...kept[1]]);
  const first = CARDS.filter((c) => c[0] !== "Z" && !held.has(c));
  await shuffle(first, prefix, hand, 1);
  const second = [...first.slice(6), ...CARDS.filter((c) => c[0] === "Z" && !held.has(c))];
  await shuffle(second, prefix, hand, 2);
  const hands = [[...kept[0]], [...kept[1]]];
  let seat = 1 - dealer;
  let at = 0;
  while ((hands[0].length < handSize || hands[1].length < handSize) && at < second.length) {
    if (hands[seat].length < handSize) { hands[seat].push(second[at]); at += 1; }
    seat = 1 - seat;
  }
  const tea = [0, 1, 2].map((r) => ({ number: first[2 * r], suit: first[2 * r + 1] }));
  return { type: "hand_dealt", hand, dealer, tea, hands, set_aside: second.slice(at) };
}

const sameDeal = (logged, dealt) => JSON.stringify([logged.tea, logged.hands, logged.set_aside])
  === JSON.stringify([dealt.tea, dealt.hands, dealt.set_aside]);

// ---- §6 Merkle tree and checkpoints --------------------------------------------------

export const leafData = (leaf) => concat(field(leaf[0]), field(String(leaf[1])), field(bytesOfHex(leaf[2])));
export const leafHash = (data) => sha256(concat(new Uint8Array([0]), data));
const nodeHash = (l, r) => sha256(concat(new Uint8Array([1]), l, r));

/** RFC 9162 §2.1.3.2: does the leaf hash sit at `index` of the tree of `size` with this root? */
export async function verifyInclusion(leaf, index, size, path, root) {
  if (index < 0 || index >= size) return false;
  let fn = index;
  let sn = size - 1;
  let r = leaf;
  for (const p of path) {
    if (sn === 0) return false;
    if (fn & 1 || fn === sn) {
      r = await nodeHash(p, r);
      if (!(fn & 1)) while (fn && !(fn & 1)) { fn >>= 1; sn >>= 1; }
    } else {
      r = await nodeHash(r, p);
    }
    fn >>= 1;
    sn >>= 1;
  }
  return sn === 0 && equal(r, root);
}

/** What a checkpoint signs (§6): `matcha-checkpoint/2` adds its history tree's size and head. */
export function checkpointMessage(c) {
  const v2 = c.format === "matcha-checkpoint/2";
  if (!v2 && c.format !== "matcha-checkpoint/1") throw new EvidenceProblem("bad_checkpoint", `unknown checkpoint format ${c.format}`);
  return concat(utf8.encode(v2 ? "matcha-checkpoint-v2" : "matcha-checkpoint-v1"), field(c.origin), field(String(c.sequence)),
    field(String(c.tree_size)), field(bytesOfHex(c.root)), field(String(c.position)), field(c.issued_at), field(c.key_id),
    ...(v2 ? [field(String(c.history_size)), field(bytesOfHex(c.history_root))] : []));
}

/** RFC 9162 §2.1.4.2: does the tree of `second` leaves (root `sr0`) extend that of `first` (root `fr0`)? */
export async function verifyConsistency(first, second, fr0, sr0, proof) {
  if (first < 0 || first > second) return false;
  if (first === second) return proof.length === 0 && equal(fr0, sr0);
  if (first === 0) return proof.length === 0;
  if (!proof.length) return false;
  const path = (first & (first - 1)) === 0 ? [fr0, ...proof] : [...proof];
  let fn = first - 1;
  let sn = second - 1;
  while (fn & 1) { fn >>= 1; sn >>= 1; }
  let fr = path[0];
  let sr = path[0];
  for (const c of path.slice(1)) {
    if (sn === 0) return false;
    if (fn & 1 || fn === sn) {
      fr = await nodeHash(c, fr);
      sr = await nodeHash(c, sr);
      if (!(fn & 1)) while (fn && !(fn & 1)) { fn >>= 1; sn >>= 1; }
    } else {
      sr = await nodeHash(sr, c);
    }
    fn >>= 1;
    sn >>= 1;
  }
  return sn === 0 && equal(fr, fr0) && equal(sr, sr0);
}

/**
 * A consistency proof (GET /api/checkpoints/consistency): both checkpoints signed,
 * both `/2`, of one log, in order, and the second's history extends the first's.
 * null when it holds, else {code, detail}.
 */
export async function consistencyProblem(proof, ring) {
  try {
    const { first: a, second: b } = proof;
    for (const c of [a, b]) {
      await signedBy(ring, c.key_id, checkpointMessage(c), c.signature);
      if (c.format !== "matcha-checkpoint/2") throw new EvidenceProblem("not_consistent", `checkpoint ${c.sequence} signs no history`);
    }
    if (a.origin !== b.origin || a.sequence > b.sequence) throw new EvidenceProblem("not_consistent", "the checkpoints are not of one log, in order");
    const holds = await verifyConsistency(a.history_size, b.history_size, bytesOfHex(a.history_root), bytesOfHex(b.history_root), proof.path.map(bytesOfHex));
    if (!holds) throw new EvidenceProblem("not_consistent", `checkpoint ${b.sequence} does not extend checkpoint ${a.sequence}: the log was cut or rewritten between them`);
    return null;
  } catch (e) {
    if (e instanceof EvidenceProblem) return { code: e.code, detail: e.detail };
    throw e;
  }
}

async function proofProblem(proof, ring, matchId) {
  const c = proof.checkpoint;
  await signedBy(ring, c.key_id, checkpointMessage(c), c.signature);
  if (proof.leaf[0] !== matchId) throw new EvidenceProblem("not_included", `the checkpoint proof is for match ${proof.leaf[0]}`);
  const leaf = await leafHash(leafData(proof.leaf));
  if (!(await verifyInclusion(leaf, proof.leaf_index, c.tree_size, proof.path.map(bytesOfHex), bytesOfHex(c.root)))) {
    throw new EvidenceProblem("not_included", `the leaf of ${matchId} is not in checkpoint ${c.sequence}`);
  }
}

// ---- §7 a whole record ---------------------------------------------------------------

/**
 * Verify a match record (GET /api/matches/{id}/record) with the service's keys.
 * `keys`: the published keyring (pinned); absent, the record's own keys (which
 * proves only that the record is self-consistent). `receipts`: those a player kept.
 * Returns {ok, problems: [{code, detail}], checked: [sentences], ms}.
 */
export async function verifyRecord(record, options = {}) {
  const started = performance.now();
  const problems = [];
  const checked = [];
  try {
    await checkRecord(record, options, problems, checked);
  } catch (e) {
    // A hostile file can be any JSON at all: whatever it breaks is a refusal, never a pass.
    problems.push({ code: "malformed", detail: `not a match record this verifier can read: ${e && e.message ? e.message : e}` });
  }
  return { ok: problems.length === 0, problems, checked, ms: performance.now() - started };
}

async function checkRecord(record, { keys = null, receipts = [] }, problems, checked) {
  if (!record || typeof record !== "object" || !Array.isArray(record.events) || !record.headers) {
    throw new Error("no headers or no list of events");
  }
  const problem = (code, detail) => problems.push({ code, detail });
  const attempt = async (fn) => {
    try { await fn(); } catch (e) { if (e instanceof EvidenceProblem) problem(e.code, e.detail); else throw e; }
  };
  let ring = new Map();
  await attempt(async () => { ring = await keyring(keys || record.keys || []); });
  const events = record.events || [];
  const matchId = record.headers && record.headers.match_id;
  if (!events.length) problem("no_events", "the record has no events");

  // The hash each event claims, by version: what receipts are held against (a broken
  // chain is its own problem; a receipt still shows a cut or a rewrite past it).
  const hashes = new Map(events.map((e) => [e.version, e.hash]));
  // §2, §3: the chain, stopping at its first break (what follows a break proves nothing).
  let prev = GENESIS;
  for (let i = 0; i < events.length; i += 1) {
    const e = events[i];
    if (e.version !== i + 1) { problem("version_gap", `event ${i + 1} is numbered ${e.version}`); break; }
    if (e.prev_hash !== prev) { problem("prev_hash_mismatch", `event ${e.version}: prev_hash is not the previous event's hash`); break; }
    let hash;
    try {
      hash = await chainHash({ match_id: matchId, version: e.version, actor: e.actor, recorded_at: e.recorded_at, prev_hash: e.prev_hash }, e.event);
    } catch (err) {
      if (!(err instanceof EvidenceProblem)) throw err;
      problem(err.code, `event ${e.version}: ${err.detail}`);
      break;
    }
    if (hash !== e.hash) { problem("hash_mismatch", `event ${e.version}: its hash does not match its content`); break; }
    prev = e.hash;
  }
  if (!problems.length) checked.push(`chain: ${events.length} events, every hash recomputed`);

  // The seed, from the chained match_ended (the headers must agree); a record cut
  // before its end has only the headers' (its receipt then shows the cut).
  const ended = events.map((e) => e.event).find((ev) => ev && ev.type === "match_ended");
  const told = (record.headers && record.headers.seed) || null;
  const seed = ended ? ended.seed : told;
  if (ended && told && told !== ended.seed) problem("headers_mismatch", "the headers reveal another seed than the match_ended event");
  const salt = await headSalt(seed);

  // §5: the record's receipt signs its last version.
  const last = Math.max(0, ...hashes.keys());
  if (!record.receipt) problem("no_receipt", "the record carries no receipt: nothing signed by the service");
  else {
    const r = record.receipt;
    const found = (await receiptProblem(r, ring)) || (r.match_id !== matchId
      ? { code: "receipt_mismatch", detail: `the record's receipt is for match ${r.match_id}` }
      : await receiptAgainst(r, hashes, salt, "the record's receipt"));
    if (found) problems.push(found);
    else if (r.version !== last) problem("unsigned_events", `the record's receipt signs version ${r.version}, but the record goes on to version ${last}`);
    else checked.push(`receipt: version ${r.version} signed by key ${r.key_id}`);
  }
  for (const r of receipts) {
    const found = (await receiptProblem(r, ring)) || await receiptAgainst(r, hashes, salt, `your receipt of version ${r.version}`);
    if (found) problems.push(found);
  }
  if (receipts.length) checked.push(`${receipts.length} receipts kept by this browser checked`);

  // §4: the commitment, then every deal.
  const created = events[0] && events[0].event;
  if (!seed) problem("no_seed", "the record reveals no seed: the deals cannot be checked");
  else if (!/^[0-9a-f]{64}$/.test(seed)) problem("seed_commitment", "the revealed seed is not 64 lower-case hex characters");
  else if (!created || created.type !== "match_created") problem("not_canonical", "the record does not start with match_created");
  else {
    const expected = await commitment(created, seed);
    if (expected === null) problem("seed_commitment", `unknown dealing scheme ${created.dealing_scheme}`);
    else if (expected !== created.seed_commitment) problem("seed_commitment", "the revealed seed does not match the commitment published at version 1");
    let kept = [[], []];
    let deals = 0;
    for (const e of events) {
      const ev = e.event;
      if (ev.type === "hand_ended") kept = [[], []];
      else if (ev.type === "cards_kept") kept[ev.seat] = ev.cards;
      else if (ev.type === "hand_dealt") {
        const dealt = await deal(seed, ev.hand, ev.dealer, kept, created.ruleset.hand_size);
        if (!sameDeal(ev, dealt)) { problem("deal_mismatch", `event ${e.version}: hand ${ev.hand} was not dealt as the seed gives`); break; }
        deals += 1;
      }
    }
    if (!problems.some((p) => p.code === "seed_commitment" || p.code === "deal_mismatch")) checked.push(`seed: fits its commitment; ${deals} deals re-dealt from it`);
  }

  // §6: the checkpoint proof, and its leaf against the record like a receipt.
  if (record.checkpoint) {
    const before = problems.length;
    await attempt(async () => {
      await proofProblem(record.checkpoint, ring, matchId);
      const leaf = record.checkpoint.leaf;
      const found = await receiptAgainst({ version: leaf[1], blinded_hash: leaf[2] }, hashes, salt, `checkpoint ${record.checkpoint.checkpoint.sequence}`);
      if (found) problems.push(found);
    });
    if (problems.length === before) checked.push(`checkpoint ${record.checkpoint.checkpoint.sequence} holds version ${record.checkpoint.leaf[1]}`);
  }
}

// ---- keys pinned at first sight ------------------------------------------------------

const PINS = "matcha.pinned-keys";

/**
 * The keys to verify with for this service (`origin`): those pinned in this browser
 * at first sight plus any new one `published` lists (a rotation adds a key; a pinned
 * one is never dropped, so what it signed keeps verifying). `dropped`: pinned keys the
 * service no longer publishes (a warning: it cannot forget a key it signed with).
 */
export function pinKeys(origin, published, storage = globalThis.localStorage) {
  let all = {};
  try { all = JSON.parse(storage.getItem(PINS) || "{}"); } catch { all = {}; }
  const pinned = all[origin] || {};
  const list = (published && published.keys) || [];
  const listed = new Set(list.map((k) => k.key_id));
  for (const k of list) if (!(k.key_id in pinned)) pinned[k.key_id] = k;
  all[origin] = pinned;
  try { storage.setItem(PINS, JSON.stringify(all)); } catch { /* storage full: verify with what we have */ }
  return { keys: Object.values(pinned), dropped: Object.keys(pinned).filter((id) => !listed.has(id)) };
}
