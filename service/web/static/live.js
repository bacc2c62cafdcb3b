// Follow a match live: the WebSocket first; if it cannot open, SSE; if that
// fails too, polling. Frames are deduplicated by version, and a reconnect
// resumes from the last version seen, so nothing is missed or doubled.

/** opts: {since, token, onEvent(frame), onPresence(frame), onOdds(frame), onPoll(), onState(text)};
 * returns stop(), with stop.command(kind, body): a seat's command on the open socket
 * (a Promise of the ack, rejected with the problem+json of a refusal, or with code
 * "dropped"/"timeout" when the socket could not answer: resend over HTTP with the
 * same idempotency key), or null when no socket is open (docs/live.md). */
export function follow(matchId, opts) {
  let last = opts.since || 0;
  const pending = new Map();
  let counter = 0;
  let stopped = false;
  let ws = null, es = null;
  let timer = 0, failures = 0, retries = 0;
  const base = `/api/matches/${encodeURIComponent(matchId)}`;
  const state = (t) => opts.onState && opts.onState(t);

  function frame(data) {
    let f;
    try { f = JSON.parse(data); } catch { return; }
    if ((f.kind === "ack" || f.kind === "refused") && pending.has(f.id)) {
      const p = pending.get(f.id);
      pending.delete(f.id);
      if (f.kind === "ack") p.resolve(f); else p.reject(f.problem);
    } else if (f.kind === "event") {
      if (f.version <= last) return;
      last = f.version;
      opts.onEvent(f);
    } else if (f.kind === "presence") {
      opts.onPresence && opts.onPresence(f);
    } else if (f.kind === "odds") {
      opts.onOdds && opts.onOdds(f);    // spectators only: the server never sends players one
    } else if (f.kind === "ping" && f.version > last) {
      opts.onPoll && opts.onPoll();   // we missed something: read the view again
    }
  }

  function socket() {
    // The token goes in the first message, not the address: it stays out of access logs.
    const url = `${location.protocol === "https:" ? "wss" : "ws"}://${location.host}${base}/ws?since=${last}`;
    let opened = 0;
    let heard = false;
    ws = new WebSocket(url);
    ws.onopen = () => {
      opened = Date.now();
      ws.send(JSON.stringify(opts.token ? { kind: "hello", token: opts.token } : { kind: "hello" }));
      state("live");
    };
    ws.onmessage = (m) => { heard = true; frame(m.data); };
    ws.onclose = (e) => {
      ws = null;
      for (const p of pending.values()) p.reject({ code: "dropped", detail: "The live socket closed." });
      pending.clear();
      if (stopped) return;
      if ([4400, 4401, 4403, 4404].includes(e.code)) { state(`closed (${e.code})`); poll(); return; }
      // A socket that never opened counts towards the fallback; one that lived
      // a while resets the back-off, one that keeps dropping at once backs off.
      if (!opened || (!heard && Date.now() - opened < 2000)) failures += 1;
      retries = opened && Date.now() - opened > 10000 ? 0 : retries + 1;
      state("reconnecting…");
      if (failures >= 3) { sse(); return; }
      timer = setTimeout(socket, Math.min(8000, 250 * 2 ** retries));
    };
  }

  function sse() {
    if (!window.EventSource) { poll(); return; }
    const q = new URLSearchParams({ since: String(last) });
    if (opts.token) q.set("token", opts.token);
    es = new EventSource(`${base}/stream?${q}`);
    const on = (m) => frame(m.data);
    for (const name of ["message", "presence", "odds"]) es.addEventListener(name, on);
    es.onopen = () => state("live (SSE)");
    es.onerror = () => {
      if (es.readyState === EventSource.CLOSED) { es = null; poll(); }
    };
  }

  function poll() {
    if (stopped) return;
    state("updating every 2 s");
    opts.onPoll && opts.onPoll();
    timer = setTimeout(poll, 2000);
  }

  function command(kind, body) {
    if (!opts.token || !ws || ws.readyState !== WebSocket.OPEN) return null;
    const id = `c${++counter}`;
    return new Promise((resolve, reject) => {
      pending.set(id, { resolve, reject });
      ws.send(JSON.stringify({ kind, id, ...body }));
      setTimeout(() => {
        if (pending.delete(id)) reject({ code: "timeout", detail: "No answer on the live socket." });
      }, 10000);
    });
  }

  socket();
  const stop = () => {
    stopped = true;
    clearTimeout(timer);
    if (ws) ws.close(1000);
    if (es) es.close();
  };
  stop.command = command;
  return stop;
}
