// The console's only way to the server: the JSON API under /api/v1, with
// the token in the Authorization header.  The token lives in this tab's
// sessionStorage only (gone when the tab closes, or at sign-out); it never
// goes into a URL, a cookie or localStorage.

const KEY = "cronvisor.token";
const BASE = "/api/v1";

export const session = {
  token: () => sessionStorage.getItem(KEY),
  set: (t) => sessionStorage.setItem(KEY, t),
  clear: () => sessionStorage.removeItem(KEY),
};

// An error answer of the API: {"error": {code, message, field}}.
export class ApiError extends Error {
  constructor(status, code, message, field) {
    super(message);
    this.status = status;
    this.code = code;
    this.field = field;
  }
}

let onUnauthorized = () => {};
export function whenUnauthorized(fn) {
  onUnauthorized = fn;
}

// A query string of the non-empty members of params.
export function qs(params) {
  const u = new URLSearchParams();
  for (const [k, v] of Object.entries(params || {}))
    if (v !== null && v !== undefined && v !== "") u.set(k, v);
  const s = u.toString();
  return s ? "?" + s : "";
}

// api("GET", "/schedules", body?, {headers}): the answer's JSON (null for
// 204).  A 503 of a read, or of a request with an Idempotency-Key (sent
// again with the same key), is tried again after its Retry-After, three
// times at most; any other request may have been done before its 503
// (nginx answers 503 for the API's 504 too), so it is not sent twice.
// Throws ApiError.
export async function api(method, path, body, opts) {
  const headers = Object.assign({Accept: "application/json"},
    (opts && opts.headers) || {});
  const token = (opts && opts.token) || session.token();
  if (token) headers.Authorization = "Bearer " + token;
  if (body !== undefined) headers["Content-Type"] = "application/json";
  for (let attempt = 0; ; attempt++) {
    let r;
    try {
      r = await fetch(BASE + path, {
        method, headers, cache: "no-store", credentials: "omit",
        body: body === undefined ? undefined : JSON.stringify(body),
      });
    } catch (e) {
      throw new ApiError(0, "network", "the server cannot be reached", null);
    }
    if (r.status === 503 && attempt < 3 &&
        (method === "GET" || headers["Idempotency-Key"])) {
      const wait = Math.min(5, Number(r.headers.get("Retry-After")) || 1);
      await new Promise((ok) => setTimeout(ok, wait * 1000));
      continue;
    }
    if (r.status === 204) return null;
    let j = null;
    try {
      j = await r.json();
    } catch (e) {
      j = null;
    }
    if (r.ok) return j;
    const e = (j && j.error) || {};
    const err = new ApiError(r.status, e.code || "http_" + r.status,
      e.message || `the server answered ${r.status}`, e.field || null);
    if (r.status === 401 && !(opts && opts.token)) onUnauthorized(err);
    throw err;
  }
}

// A random Idempotency-Key for one intended action.
export function newKey() {
  if (crypto.randomUUID) return "console-" + crypto.randomUUID();
  const b = crypto.getRandomValues(new Uint8Array(16));
  return "console-" + Array.from(b, (x) => x.toString(16).padStart(2, "0")).join("");
}

// Follows GET /events (server-sent events) with fetch, since EventSource
// cannot send the Authorization header and the token must stay out of
// URLs.  onEvent gets each event's parsed data; reconnects after the
// stream ends (it does every 5 minutes) from the last seq seen.  Returns
// a function that stops it.
export function follow(onEvent, onState) {
  let stopped = false;
  let after = null;
  let ctl = null;
  async function once() {
    ctl = new AbortController();
    const headers = {Accept: "text/event-stream",
      Authorization: "Bearer " + session.token()};
    const r = await fetch(BASE + "/events" + qs({after}), {
      headers, cache: "no-store", credentials: "omit", signal: ctl.signal});
    if (r.status === 401) {
      stopped = true;
      onUnauthorized(new ApiError(401, "unauthorized", "the token is no longer valid", null));
    }
    if (!r.ok || !r.body) throw new Error("events: " + r.status);
    onState(true);
    const reader = r.body.getReader();
    const dec = new TextDecoder();
    let buf = "";
    for (;;) {
      const {value, done} = await reader.read();
      if (done) break;
      buf += dec.decode(value, {stream: true});
      let i;
      while ((i = buf.indexOf("\n\n")) >= 0) {
        const block = buf.slice(0, i);
        buf = buf.slice(i + 2);
        let type = "message";
        let data = "";
        for (const line of block.split("\n")) {
          if (line.startsWith("event:")) type = line.slice(6).trim();
          else if (line.startsWith("data:")) data += line.slice(5).trim();
          else if (line.startsWith("id:")) after = line.slice(3).trim();
        }
        if (data && type !== "gap") {
          try {
            onEvent(JSON.parse(data));
          } catch (e) {
            /* not JSON: ignored */
          }
        }
      }
    }
  }
  (async () => {
    let delay = 2000;
    while (!stopped && session.token()) {
      const began = Date.now();
      try {
        await once();
        // The stream ended, as it does every 5 minutes: again at once,
        // unless it ended at once (then as after a failure).
        if (Date.now() - began > 10000) {
          delay = 2000;
          continue;
        }
      } catch (e) {
        if (stopped) break;
        onState(false);
      }
      // Refused (429: the API's streams are taken) or cut: wait, then
      // longer each time, as the server's retry: asks at least.
      await new Promise((ok) => setTimeout(ok, delay));
      delay = Math.min(delay * 2, 30000);
    }
  })();
  return () => {
    stopped = true;
    if (ctl) ctl.abort();
    onState(false);
  };
}
