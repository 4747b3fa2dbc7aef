// Schedules: the list with the API's search, filters, sort and cursor
// pages (GET /api/v1/schedules), and bulk pause, resume and delete.
// The filters live in the address bar, so a filtered list can be
// bookmarked, shared and reloaded.

import {api, qs} from "./api.js";
import {ROOT, ctx} from "./app.js";
import {alert, badge, button, fill, h, link, throttle, time} from "./dom.js";

const statuses = ["active", "paused", "done", "dead"];
const kinds = ["interval", "cron", "once"];
const targets = ["exec", "http", "redis", "agent", "pipeline", "receiver"];
const sorts = [["created_at", "Created"], ["name", "Name"], ["next_run_at", "Next run"]];
const PAGE = 50;

// How a schedule fires, in a few words.
export function timing(s) {
  if (s.kind === "interval") return `every ${s.interval_seconds} s`;
  if (s.kind === "cron") return `cron ${s.cron} (${s.timezone})`;
  if (s.kind === "once") return `once at ${s.at}`;
  return s.kind || "";
}

export function targetType(s) {
  return s.target && s.target.type ? s.target.type : "receiver";
}

function select(name, label, options, value) {
  return h("div.col-6.col-md-2", {},
    h("label.form-label.small", {for: "f-" + name}, label),
    h("select.form-select.form-select-sm", {id: "f-" + name, name},
      h("option", {value: ""}, "any"),
      options.map((o) => {
        const [v, t] = Array.isArray(o) ? o : [o, o];
        return h("option", {value: v, selected: v === value || null}, t);
      })));
}

export async function render(el) {
  document.title = "Schedules · cronvisor";
  const params = new URLSearchParams(location.search);
  const f = {};
  for (const k of ["q", "status", "kind", "target_type", "workflow_id",
    "owner", "sort", "order", "cursor"]) f[k] = params.get(k) || "";

  const form = h("form.row.g-2.align-items-end.mb-3", {id: "filters",
    role: "search", onsubmit: (e) => {
      e.preventDefault();
      const d = new FormData(form);
      const p = {};
      for (const [k, v] of d.entries()) if (v) p[k] = v;
      ctx.go("/scheduler/schedules" + qs(p));
    }},
  h("div.col-12.col-md-3", {},
    h("label.form-label.small", {for: "f-q"}, "Name contains"),
    h("input.form-control.form-control-sm", {id: "f-q", name: "q", type: "search",
      value: f.q, maxlength: 200})),
  select("status", "Status", statuses, f.status),
  select("kind", "Kind", kinds, f.kind),
  select("target_type", "Target", targets, f.target_type),
  h("div.col-6.col-md-2", {},
    h("label.form-label.small", {for: "f-workflow_id"}, "Workflow id"),
    h("input.form-control.form-control-sm", {id: "f-workflow_id",
      name: "workflow_id", value: f.workflow_id})),
  ctx.isAdmin() ? h("div.col-6.col-md-2", {},
    h("label.form-label.small", {for: "f-owner"}, "Owner"),
    h("input.form-control.form-control-sm", {id: "f-owner", name: "owner",
      value: f.owner})) : null,
  h("div.col-6.col-md-2", {},
    h("label.form-label.small", {for: "f-sort"}, "Sort by"),
    h("select.form-select.form-select-sm", {id: "f-sort", name: "sort"},
      sorts.map(([v, t]) => h("option", {value: v,
        selected: v === (f.sort || "created_at") || null}, t)))),
  h("div.col-6.col-md-1", {},
    h("label.form-label.small", {for: "f-order"}, "Order"),
    h("select.form-select.form-select-sm", {id: "f-order", name: "order"},
      h("option", {value: "asc", selected: f.order !== "desc" || null}, "asc"),
      h("option", {value: "desc", selected: f.order === "desc" || null}, "desc"))),
  h("div.col-auto", {},
    h("button.btn.btn-sm.btn-primary", {type: "submit", id: "search"}, "Search"),
    " ",
    h("a.btn.btn-sm.btn-outline-secondary", {href: ROOT + "/scheduler/schedules",
      dataset: {nav: ""}}, "Clear")));

  const msg = h("div", {id: "list-msg"});
  const bulk = h("div.bulk.mb-2", {id: "bulk"});
  const list = h("div", {id: "list"});
  const pager = h("nav.pager", {"aria-label": "Pages"});
  fill(el,
    h("div.d-flex.justify-content-between.align-items-center.mb-2", {},
      h("h1.h4.mb-0", {}, "Schedules"),
      ctx.canWrite() ? h("a.btn.btn-primary.btn-sm", {id: "create",
        href: ROOT + "/scheduler/schedules/new", dataset: {nav: ""}}, "Create Schedule") : null),
    form, msg, bulk, list, pager);

  const chosen = new Set();
  let rows = [];

  function bulkBar() {
    if (!ctx.canWrite()) return fill(bulk);
    const n = chosen.size;
    fill(bulk,
      h("span.me-2", {id: "chosen"}, `${n} selected`),
      button("Pause", {id: "bulk-pause", disabled: !n || null,
        onclick: () => each("pause")}),
      " ",
      button("Resume", {id: "bulk-resume", disabled: !n || null,
        onclick: () => each("resume")}),
      " ",
      button("Delete", {id: "bulk-delete", disabled: !n || null,
        onclick: remove}, "outline-danger"));
  }

  async function each(action) {
    const want = action === "pause" ? "active" : "paused";
    const ids = rows.filter((s) => chosen.has(s.id) && s.status === want).map((s) => s.id);
    const skipped = chosen.size - ids.length;
    let done = 0;
    const failed = [];
    for (const id of ids) {
      try {
        await api("POST", `/schedules/${id}/${action}`);
        done++;
      } catch (e) {
        failed.push(`${id}: ${e.message}`);
      }
    }
    fill(msg, alert(failed.length ? "warning" : "success",
      `${action === "pause" ? "Paused" : "Resumed"} ${done}.`,
      skipped ? ` ${skipped} skipped (not ${want}).` : "",
      failed.length ? h("ul.mb-0", {}, failed.map((x) => h("li", {}, x))) : null));
    chosen.clear();
    await load();
  }

  async function remove() {
    const ids = [...chosen];
    if (!window.confirm(`Delete ${ids.length} schedule(s) and their history?`)) return;
    try {
      const r = await api("POST", "/schedules/batch-delete", {ids});
      fill(msg, alert("success", `Deleted ${r.count}.`));
      chosen.clear();
    } catch (e) {
      fill(msg, alert("danger", e.message));
    }
    await load();
  }

  async function load() {
    const p = Object.assign({}, f, {limit: PAGE});
    let page;
    try {
      page = await api("GET", "/schedules" + qs(p));
    } catch (e) {
      fill(list, alert("danger", e.field ? `${e.field}: ${e.message}` : e.message));
      fill(pager);
      return;
    }
    rows = page.schedules;
    const all = h("input.form-check-input", {type: "checkbox", id: "check-all",
      "aria-label": "Select all on this page",
      onchange: () => {
        for (const s of rows) all.checked ? chosen.add(s.id) : chosen.delete(s.id);
        for (const c of list.querySelectorAll("input[data-id]")) c.checked = all.checked;
        bulkBar();
      }});
    // The columns a phone hides (console.css: .wide).
    const wide = new Set(["Owner", "Timing", "Last run", "Runs", "Errors"]);
    const heads = [ctx.canWrite() ? all : null, "Name", "Owner", "Timing",
      "Target", "Status", "Next run", "Last run", "Runs", "Errors"].filter((x) => x !== null);
    fill(list, h("div.table-responsive", {}, h("table.table.table-sm.table-hover.align-middle",
      {id: "schedules"},
      h("thead", {}, h("tr", {}, heads.map((x) => h("th", {scope: "col",
        class: wide.has(x) ? "wide" : null}, x)))),
      h("tbody", {}, rows.length ? rows.map((s) => h("tr", {dataset: {id: s.id}},
        ctx.canWrite() ? h("td", {}, h("input.form-check-input", {type: "checkbox",
          dataset: {id: s.id}, "aria-label": "Select " + s.name,
          checked: chosen.has(s.id) || null,
          onchange: (e) => {
            e.target.checked ? chosen.add(s.id) : chosen.delete(s.id);
            bulkBar();
          }})) : null,
        h("td", {}, link(`${ROOT}/scheduler/schedules/${s.id}`, s.name)),
        h("td.wide", {}, s.owner),
        h("td.small.wide", {}, timing(s)),
        h("td", {}, targetType(s)),
        h("td", {}, badge(s.status)),
        h("td", {}, time(s.next_run_at)),
        h("td.wide", {}, time(s.last_run_at)),
        h("td.wide", {}, String(s.run_count)),
        h("td.wide", {}, String(s.error_count)))) :
        h("tr", {}, h("td.text-secondary", {colspan: heads.length},
          "No schedule matches."))))));
    // The cursors of the pages before this one, kept in the history
    // entry: Previous goes to the last of them (a reload keeps them; a
    // page opened from a link has none, and Previous goes to the first).
    const trail = (history.state && history.state.trail) || [];
    const at = (cursor, t) => ctx.go("/scheduler/schedules" +
      qs(Object.assign({}, f, {cursor})), false, {trail: t});
    const first = !f.cursor;
    fill(pager,
      button("First page", {id: "page-first", disabled: first || null,
        onclick: () => at("", [])}),
      " ",
      button("Previous", {id: "page-prev", disabled: first || null,
        onclick: () => at(trail.length ? trail[trail.length - 1] : "", trail.slice(0, -1))}),
      " ",
      button("Next", {id: "page-next", disabled: !page.next_cursor || null,
        onclick: () => at(page.next_cursor, [...trail, f.cursor])}),
      h("span.ms-2.small.text-secondary", {}, `${rows.length} on this page`));
    bulkBar();
  }
  await load();
  const again = throttle(() => load().catch(() => {}), 1000);
  return {
    onEvent(ev) {
      if (/^(schedule\.|run\.ended)/.test(ev.type)) again();
    },
    stop: () => again.cancel(),
  };
}
