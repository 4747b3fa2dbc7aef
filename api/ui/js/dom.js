// The console's DOM helpers.  Every value that comes from the API reaches
// the page as a text node or an attribute value, never as markup: names,
// outputs and error strings are shown as the text they are (issue 22).

// h("tag.class1.class2", {attr: value, onclick: fn}, child, ...): an
// element.  Children are nodes, strings (text), numbers, arrays of
// children, or null/undefined/false (skipped).
export function h(spec, attrs, ...kids) {
  const [tag, ...classes] = spec.split(".");
  const el = document.createElement(tag || "div");
  if (classes.length) el.className = classes.join(" ");
  for (const [k, v] of Object.entries(attrs || {})) {
    if (v === null || v === undefined || v === false) continue;
    if (k.startsWith("on") && typeof v === "function")
      el.addEventListener(k.slice(2), v);
    else if (k === "class") el.className += (el.className ? " " : "") + v;
    else if (k === "dataset") Object.assign(el.dataset, v);
    else if (k === "value") el.value = v;
    else if (k === "checked") el.checked = !!v;
    else el.setAttribute(k, v === true ? "" : String(v));
  }
  append(el, kids);
  return el;
}

function append(el, kids) {
  for (const k of kids) {
    if (k === null || k === undefined || k === false) continue;
    if (Array.isArray(k)) append(el, k);
    else if (k instanceof Node) el.appendChild(k);
    else el.appendChild(document.createTextNode(String(k)));
  }
}

// Replaces el's children with kids.
export function fill(el, ...kids) {
  el.replaceChildren();
  append(el, kids);
  return el;
}

const pad = (n, w = 2) => String(n).padStart(w, "0");

// An instant as the browser's local time, to the millisecond when it has
// one ("2026-11-27 06:05:00.436"); "—" for none.
export function when(iso) {
  if (!iso) return "—";
  const d = new Date(iso);
  if (isNaN(d)) return String(iso);
  const ms = d.getMilliseconds();
  return `${d.getFullYear()}-${pad(d.getMonth() + 1)}-${pad(d.getDate())} ` +
    `${pad(d.getHours())}:${pad(d.getMinutes())}:${pad(d.getSeconds())}` +
    (ms ? "." + pad(ms, 3) : "");
}

// <time> showing when(iso), the UTC instant as its title and datetime.
export function time(iso) {
  if (!iso) return h("span.text-secondary", {}, "—");
  return h("time", {datetime: iso, title: iso}, when(iso));
}

// "3 s ago", "in 2 min": how far iso is from now.
export function ago(iso) {
  if (!iso) return "";
  const s = Math.round((new Date(iso) - Date.now()) / 1000);
  const a = Math.abs(s);
  const t = a < 90 ? `${a} s` : a < 5400 ? `${Math.round(a / 60)} min`
    : a < 172800 ? `${Math.round(a / 3600)} h` : `${Math.round(a / 86400)} d`;
  return s < 0 ? `${t} ago` : `in ${t}`;
}

export function duration(ms) {
  if (ms === null || ms === undefined) return "—";
  if (ms < 1000) return `${ms} ms`;
  if (ms < 120000) return `${(ms / 1000).toFixed(ms < 10000 ? 2 : 1)} s`;
  return `${Math.floor(ms / 60000)} min ${Math.round((ms % 60000) / 1000)} s`;
}

const tones = {
  active: "success", succeeded: "success", completed: "success",
  success: "success", healthy: "success", paused: "secondary",
  skipped: "secondary", missed: "secondary", expired: "secondary",
  pending: "secondary", done: "info", running: "primary",
  waiting: "primary", interrupted: "warning", partial: "warning",
  dead: "danger", failed: "danger", timed_out: "danger", lost: "danger",
  crashed: "danger", protocol_error: "danger", unhealthy: "danger",
};

// A status as a badge whose colour says good, neutral or bad.
export function badge(status) {
  const s = status === null || status === undefined ? "—" : String(status);
  return h(`span.badge.status.text-bg-${tones[s] || "light"}`,
    {dataset: {status: s}}, s);
}

// A link inside the console (the router takes the click).
export function link(href, ...kids) {
  return h("a", {href, dataset: {nav: ""}}, ...kids);
}

// A JSON value for reading: pretty-printed text in a <pre>.
export function jsonBlock(v) {
  return h("pre.json", {}, JSON.stringify(v, null, 2));
}

// A table: heads (strings), rows (arrays of cells).
export function table(heads, rows, attrs) {
  return h("div.table-responsive", {},
    h("table.table.table-sm.table-hover.align-middle", attrs || {},
      h("thead", {}, h("tr", {}, heads.map((x) => h("th", {scope: "col"}, x)))),
      h("tbody", {}, rows.length ? rows.map((r) => r instanceof Node ? r
        : h("tr", {}, r.map((c) => h("td", {}, c))))
        : h("tr", {}, h("td.text-secondary", {colspan: heads.length},
          "Nothing to show.")))));
}

// A key/value list.
export function facts(pairs) {
  return h("dl.facts", {}, pairs.filter(Boolean).map(([k, v]) =>
    [h("dt", {}, k), h("dd", {}, v === null || v === undefined || v === ""
      ? h("span.text-secondary", {}, "—") : v)]));
}

// An alert box; kind: danger, success, warning, info.
export function alert(kind, ...kids) {
  return h(`div.alert.alert-${kind}`, {role: kind === "danger" ? "alert" : "status"}, ...kids);
}

export function button(label, attrs, kind = "outline-secondary") {
  return h(`button.btn.btn-sm.btn-${kind}`, Object.assign({type: "button"}, attrs || {}), label);
}

// Runs fn at most once every ms, the last call's arguments winning: a
// view drawn again on live events is drawn within ms of the first, however
// many follow (a busy fan-out sends them without a pause).
export function throttle(fn, ms) {
  let t = null;
  let last = [];
  const run = () => {
    t = null;
    fn(...last);
  };
  const call = (...a) => {
    last = a;
    if (t === null) t = setTimeout(run, ms);
  };
  call.cancel = () => {
    clearTimeout(t);
    t = null;
  };
  return call;
}

// Runs fn after ms of quiet (for previews as one types).
export function debounce(fn, ms) {
  let t = null;
  return (...a) => {
    clearTimeout(t);
    t = setTimeout(() => fn(...a), ms);
  };
}
