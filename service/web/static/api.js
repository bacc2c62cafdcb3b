// The JSON API: bearer token from localStorage, problem+json errors as ApiError.
const KEY = "matcha.token";
const ME = "matcha.me";

export class ApiError extends Error {
  constructor(status, code, detail) {
    super(detail);
    this.status = status;
    this.code = code;
    this.detail = detail;
  }
}

export const auth = {
  get token() { return localStorage.getItem(KEY) || ""; },
  get me() { try { return JSON.parse(localStorage.getItem(ME) || "null"); } catch { return null; } },
  save(token, me) {
    localStorage.setItem(KEY, token);
    localStorage.setItem(ME, JSON.stringify(me));
  },
  clear() { localStorage.removeItem(KEY); localStorage.removeItem(ME); },
};

/** fetch JSON; `anonymous` leaves the token out (the watch page: public information only). */
export async function api(path, { method = "GET", body, anonymous = false, token = anonymous ? "" : auth.token, headers: extra = {} } = {}) {
  const headers = { Accept: "application/json", ...extra };
  if (body !== undefined) headers["Content-Type"] = "application/json";
  if (token) headers.Authorization = `Bearer ${token}`;
  let res;
  try {
    res = await fetch(path, { method, headers, body: body === undefined ? undefined : JSON.stringify(body) });
  } catch {
    throw new ApiError(0, "offline", "The service cannot be reached; check your connection.");
  }
  const text = await res.text();
  let data = null;
  try { data = text ? JSON.parse(text) : null; } catch { data = text; }
  if (!res.ok) {
    const detail = (data && data.detail) || `${res.status} ${res.statusText}`;
    throw new ApiError(res.status, (data && data.code) || "http_error", detail);
  }
  return data;
}

/** Register `name`; keep its token. */
export async function signUp(name) {
  const reg = await api("/api/players", { method: "POST", body: { name }, anonymous: true });
  auth.save(reg.token, { id: reg.id, name: reg.name, roles: reg.roles });
  return reg;
}

/** Check a pasted token with /api/me; keep it if the service knows it. */
export async function signIn(token) {
  const me = await api("/api/me", { token });
  auth.save(token, { id: me.id, name: me.name, roles: me.roles });
  return me;
}

/** Read /api/me again (roles change); forget a token the service no longer knows. */
export async function refreshMe() {
  if (!auth.token) return null;
  try {
    const me = await api("/api/me");
    auth.save(auth.token, { id: me.id, name: me.name, roles: me.roles });
    return me;
  } catch (e) {
    if (e.status === 401) auth.clear();
    return null;
  }
}
