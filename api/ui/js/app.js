// The cronvisor console: a page that talks to the JSON API only
// (docs/ui.md).  This module signs in, lays out the page, routes the
// paths under /admin/ to their views and keeps the live event stream.

import {api, ApiError, follow, session, whenUnauthorized} from "./api.js";
import {alert, fill, h} from "./dom.js";
import * as overview from "./overview.js";
import * as schedules from "./schedules.js";
import * as schedule from "./schedule.js";
import * as form from "./form.js";
import * as runs from "./runs.js";
import * as agents from "./agents.js";
import * as pipelines from "./pipelines.js";
import * as executions from "./executions.js";

export const ROOT = "/admin";

// What views share: who is signed in, and how to move elsewhere.
export const ctx = {
  me: null, // {owner, role}
  canWrite: () => ctx.me && ctx.me.role !== "viewer",
  isAdmin: () => ctx.me && ctx.me.role === "admin",
  go: (path, replace, state) => navigate(path, replace, state),
  notice: null, // a message to show on the next page
};

const routes = [
  [/^\/?$/, overview.render, "overview"],
  [/^\/scheduler\/schedules\/?$/, schedules.render, "schedules"],
  [/^\/scheduler\/schedules\/new$/, form.renderNew, "schedules"],
  [/^\/scheduler\/schedules\/([0-9a-f-]{36})$/, schedule.render, "schedules"],
  [/^\/scheduler\/schedules\/([0-9a-f-]{36})\/edit$/, form.renderEdit, "schedules"],
  [/^\/runs\/([A-Za-z0-9-]+)$/, runs.render, "schedules"],
  [/^\/agents\/?$/, agents.renderList, "agents"],
  [/^\/agents\/([^/]+)$/, agents.render, "agents"],
  [/^\/scheduler\/pipelines\/?$/, pipelines.renderList, "pipelines"],
  [/^\/scheduler\/pipelines\/new$/, pipelines.renderNew, "pipelines"],
  [/^\/scheduler\/pipelines\/([^/]+)$/, pipelines.render, "pipelines"],
  [/^\/executions\/?$/, executions.renderList, "executions"],
  [/^\/executions\/([0-9a-f-]{36})$/, executions.render, "executions"],
];

const nav = [
  ["overview", "/", "Overview"],
  ["schedules", "/scheduler/schedules", "Schedules"],
  ["agents", "/agents", "Agents"],
  ["pipelines", "/scheduler/pipelines", "Pipelines"],
  ["executions", "/executions", "Executions"],
];

let current = null; // the view on the page: {onEvent, stop}
let drawn = 0; // renders begun: a view that a later one replaced is let go
let stopEvents = null;
let liveEl = null;

// Moves to path under /admin/; state: what the view keeps in the
// history entry (the list's pages already seen).
function navigate(path, replace, state) {
  const url = ROOT + path;
  if (replace) history.replaceState(state || null, "", url);
  else history.pushState(state || null, "", url);
  render();
}

// The path under /admin/ the address bar shows.
function here() {
  let p = location.pathname;
  if (p.startsWith(ROOT)) p = p.slice(ROOT.length);
  try {
    return decodeURIComponent(p) || "/";
  } catch (e) {
    return p; // a bad %-escape: no view matches it, "No such page."
  }
}

// The theme chosen (auto, light or dark; kept in localStorage, the only
// thing kept there), shown as data-theme light or dark on the root: for
// auto, the system's preference, followed as it changes.
const darkQuery = window.matchMedia("(prefers-color-scheme: dark)");
function theme(t) {
  if (t) localStorage.setItem("cronvisor.theme", t);
  const v = localStorage.getItem("cronvisor.theme") || "auto";
  document.documentElement.dataset.theme =
    v === "auto" ? (darkQuery.matches ? "dark" : "light") : v;
  return v;
}
darkQuery.addEventListener("change", () => theme());

function header(active) {
  const toggle = h("button.btn.btn-sm.btn-outline-light.ms-2", {
    type: "button", id: "theme", title: "Light, dark or as the system says",
    onclick: () => {
      const order = ["auto", "light", "dark"];
      const next = order[(order.indexOf(theme()) + 1) % 3];
      theme(next);
      toggle.textContent = "Theme: " + next;
    },
  }, "Theme: " + theme());
  const menu = h("button.btn.btn-sm.btn-outline-light.d-md-none", {
    type: "button", "aria-controls": "navlinks", "aria-expanded": "false",
    onclick: () => {
      const open = links.classList.toggle("open");
      menu.setAttribute("aria-expanded", String(open));
    },
  }, "Menu");
  const links = h("ul.navlinks", {id: "navlinks"}, nav.map(([k, p, label]) =>
    h("li", {}, h("a", {href: ROOT + p, dataset: {nav: ""},
      "aria-current": k === active ? "page" : null,
      class: k === active ? "active" : null}, label))));
  liveEl = h("span.live", {id: "live", title: "Live events", role: "status"}, "offline");
  return h("header.topbar", {},
    h("a.brand", {href: ROOT + "/", dataset: {nav: ""}}, "cronvisor"),
    menu, links,
    h("div.who", {},
      liveEl,
      h("span.me", {id: "me"}, `${ctx.me.owner} · ${ctx.me.role}`),
      toggle,
      h("button.btn.btn-sm.btn-light.ms-2", {type: "button", id: "signout",
        onclick: signOut}, "Sign out")));
}

function signOut() {
  session.clear();
  ctx.me = null;
  if (stopEvents) stopEvents();
  stopEvents = null;
  navigate("/", true);
}

function signIn(main, why) {
  document.title = "Sign in · cronvisor";
  const token = h("input.form-control", {id: "token", type: "password",
    autocomplete: "off", required: true, spellcheck: "false",
    "aria-describedby": "token-help"});
  const msg = h("div", {id: "signin-error"});
  const f = h("form.signin", {novalidate: true, onsubmit: async (e) => {
    e.preventDefault();
    const t = token.value.trim();
    if (!t) {
      fill(msg, alert("danger", "Enter an API token."));
      return;
    }
    try {
      const me = await api("GET", "/me", undefined, {token: t});
      session.set(t);
      ctx.me = me;
      render();
    } catch (err) {
      fill(msg, alert("danger", err.status === 401
        ? "This token is unknown or revoked." : err.message));
      token.focus();
    }
  }},
  h("h1.h4.mb-3", {}, "cronvisor"),
  why ? alert("warning", why) : null,
  h("label.form-label", {for: "token"}, "API token"),
  token,
  h("div.form-text", {id: "token-help"},
    "Made by cronvisorctl token create. It is kept in this tab only and forgotten at sign-out."),
  msg,
  h("button.btn.btn-primary.mt-3", {type: "submit", id: "signin"}, "Sign in"));
  fill(main, f);
  token.focus();
}

function setLive(on) {
  if (!liveEl) return;
  liveEl.textContent = on ? "live" : "offline";
  liveEl.classList.toggle("on", on);
}

export async function render() {
  const mine = ++drawn;
  const body = document.getElementById("app");
  const main = h("main.container-fluid", {id: "main", tabindex: "-1"});
  if (current && current.stop) current.stop();
  current = null;
  if (!session.token()) {
    fill(body, main);
    signIn(main);
    return;
  }
  if (!ctx.me) {
    try {
      ctx.me = await api("GET", "/me");
    } catch (e) {
      // A 401 has drawn the sign-in form already (whenUnauthorized).
      if (e instanceof ApiError && e.status === 401) return;
      fill(body, main);
      fill(main, alert("danger", "The API cannot be reached: " + e.message));
      return;
    }
    if (mine !== drawn) return; // a later render draws the page
  }
  const path = here();
  let view = null;
  let args = [];
  let active = "";
  for (const [re, fn, section] of routes) {
    const m = path.match(re);
    if (m) {
      view = fn;
      args = m.slice(1);
      active = section;
      break;
    }
  }
  fill(body, header(active), main);
  setLive(!!stopEvents);
  if (!stopEvents) stopEvents = follow((ev) => {
    if (current && current.onEvent) current.onEvent(ev);
  }, setLive);
  if (ctx.notice) {
    main.appendChild(alert("success", ctx.notice));
    ctx.notice = null;
  }
  if (!view) {
    main.appendChild(alert("warning", "No such page."));
    return;
  }
  const place = h("div");
  main.appendChild(place);
  try {
    const v = (await view(place, ...args)) || null;
    if (mine === drawn) current = v;
    else if (v && v.stop) v.stop(); // the page moved on meanwhile
  } catch (e) {
    place.appendChild(alert("danger", e.message));
  }
}

whenUnauthorized(() => {
  session.clear();
  ctx.me = null;
  if (stopEvents) stopEvents();
  stopEvents = null;
  const main = h("main.container-fluid", {id: "main"});
  fill(document.getElementById("app"), main);
  signIn(main, "The token is no longer valid: sign in again.");
});

document.addEventListener("click", (e) => {
  const a = e.target.closest("a[data-nav]");
  if (!a || e.ctrlKey || e.metaKey || e.shiftKey || e.button !== 0) return;
  const href = a.getAttribute("href");
  if (!href.startsWith(ROOT)) return;
  e.preventDefault();
  history.pushState(null, "", href);
  render();
});
window.addEventListener("popstate", render);
theme();
render();
