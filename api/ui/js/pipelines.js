// Pipelines: the list, a pipeline's steps drawn as a graph (columns by
// depth of dependency), and create and edit as the JSON document
// (docs/orchestration.md), the API's error shown at the step or field it
// names.

import {api, newKey, qs} from "./api.js";
import {ROOT, ctx} from "./app.js";
import {alert, badge, fill, h, link, table, time} from "./dom.js";

const SVG = "http://www.w3.org/2000/svg";
function s(tag, attrs, text) {
  const el = document.createElementNS(SVG, tag);
  for (const [k, v] of Object.entries(attrs || {})) el.setAttribute(k, String(v));
  if (text !== undefined) el.textContent = text;
  return el;
}

// The steps as an SVG graph: a step's column is the length of its
// longest chain of dependencies; edges go from a dependency to the step.
// counts (optional): step_id -> {completed, failed, ...} of an execution.
export function graph(steps, counts) {
  const byId = new Map(steps.map((x) => [x.step_id, x]));
  const depth = new Map();
  const seen = new Set();
  const depthOf = (id) => {
    if (depth.has(id)) return depth.get(id);
    if (seen.has(id)) return 0; // a cycle the API would have refused
    seen.add(id);
    const st = byId.get(id);
    const d = st && st.depends_on && st.depends_on.length
      ? 1 + Math.max(...st.depends_on.map(depthOf)) : 0;
    depth.set(id, d);
    return d;
  };
  steps.forEach((x) => depthOf(x.step_id));
  const cols = [];
  for (const x of steps) (cols[depth.get(x.step_id)] ||= []).push(x);
  const W = 180, H = counts ? 58 : 44, GX = 60, GY = 24;
  const pos = new Map();
  cols.forEach((col, c) => col.forEach((x, r) =>
    pos.set(x.step_id, {x: 10 + c * (W + GX), y: 10 + r * (H + GY)})));
  const width = 20 + cols.length * (W + GX) - GX;
  const height = 20 + Math.max(...cols.map((c) => c.length)) * (H + GY) - GY;
  const svg = s("svg", {viewBox: `0 0 ${width} ${height}`, width, height,
    role: "img", class: "dag", "aria-label": "The pipeline's steps and their dependencies"});
  const defs = s("defs");
  const m = s("marker", {id: "arrow", viewBox: "0 0 10 10", refX: 10, refY: 5,
    markerWidth: 7, markerHeight: 7, orient: "auto-start-reverse"});
  m.append(s("path", {d: "M 0 0 L 10 5 L 0 10 z", class: "arrowhead"}));
  defs.append(m);
  svg.append(defs);
  for (const x of steps)
    for (const d of x.depends_on || []) {
      const a = pos.get(d), b = pos.get(x.step_id);
      if (!a || !b) continue;
      svg.append(s("path", {class: "edge", "marker-end": "url(#arrow)",
        d: `M ${a.x + W} ${a.y + H / 2} C ${a.x + W + GX / 2} ${a.y + H / 2}, ` +
          `${b.x - GX / 2} ${b.y + H / 2}, ${b.x} ${b.y + H / 2}`}));
    }
  for (const x of steps) {
    const p = pos.get(x.step_id);
    const g = s("g", {class: "node", transform: `translate(${p.x},${p.y})`,
      "data-step": x.step_id});
    g.append(s("rect", {width: W, height: H, rx: 6}));
    g.append(s("text", {x: 8, y: 18, class: "step"}, x.step_id));
    g.append(s("text", {x: 8, y: 34, class: "agent"}, x.agent_id +
      (x.run_when && x.run_when !== "success" ? ` · when ${x.run_when}` : "") +
      (x.parallel === false ? " · alone" : "")));
    if (counts && counts[x.step_id]) {
      const c = counts[x.step_id];
      g.append(s("text", {x: 8, y: 50, class: "counts"},
        `✓${c.completed || 0} ✗${c.failed || 0} …${(c.pending || 0) + (c.running || 0)} ⤼${c.skipped || 0}`));
    }
    g.append(s("title", {}, `${x.step_id}: ${x.agent_id}`));
    svg.append(g);
  }
  return h("div.graph", {}, svg);
}

function href(p) {
  return `${ROOT}/scheduler/pipelines/${encodeURIComponent(p.pipeline_id)}` +
    (ctx.isAdmin() ? qs({owner: p.owner}) : "");
}

export async function renderList(el) {
  document.title = "Pipelines · cronvisor";
  const page = await api("GET", "/pipelines" + qs({limit: 500}));
  fill(el,
    h("div.d-flex.justify-content-between.align-items-center.mb-2", {},
      h("h1.h4.mb-0", {}, "Pipelines"),
      ctx.canWrite() ? h("a.btn.btn-primary.btn-sm", {id: "create-pipeline", dataset: {nav: ""},
        href: ROOT + "/scheduler/pipelines/new"}, "Create Pipeline") : null),
    table(["Pipeline", "Name", "Owner", "Steps", "Enabled", "Updated"],
      page.pipelines.map((p) => [link(href(p), p.pipeline_id), p.name || "", p.owner,
        String((p.steps || []).length), p.enabled === false ? "no" : "yes", time(p.updated_at)]),
      {id: "pipelines"}));
  return null;
}

// The JSON editor of a pipeline document; save(doc) sends it.
function editor(el, title, doc, save) {
  const ta = h("textarea.form-control.font-monospace", {id: "pipeline-json", rows: 18,
    spellcheck: "false", "aria-describedby": "pipeline-error"}, JSON.stringify(doc, null, 2));
  const err = h("div", {id: "pipeline-error"});
  const shown = h("div");
  const redraw = () => {
    try {
      const d = JSON.parse(ta.value);
      fill(shown, Array.isArray(d.steps) && d.steps.length ? graph(d.steps) : null);
    } catch (e) {
      /* drawn again once it parses */
    }
  };
  ta.addEventListener("input", redraw);
  redraw();
  fill(el, h("h1.h4", {}, title),
    h("form", {id: "pipeline-form", novalidate: true, onsubmit: async (e) => {
      e.preventDefault();
      fill(err);
      ta.classList.remove("is-invalid");
      let d;
      try {
        d = JSON.parse(ta.value);
      } catch (x) {
        ta.classList.add("is-invalid");
        fill(err, alert("danger", "not JSON: " + x.message));
        return;
      }
      try {
        await save(d);
      } catch (x) {
        ta.classList.add("is-invalid");
        fill(err, alert("danger", x.field ? `${x.field}: ${x.message}` : x.message));
      }
    }},
    h("label.form-label", {for: "pipeline-json"}, "The pipeline document"), ta, err,
    h("button.btn.btn-primary.mt-2", {type: "submit", id: "save-pipeline"}, "Save")),
    h("h2.h6.mt-3", {}, "Graph"), shown);
}

export function renderNew(el) {
  document.title = "Create Pipeline · cronvisor";
  if (!ctx.canWrite()) return fill(el, alert("warning", "A viewer token cannot change pipelines.")) && null;
  const key = newKey();
  editor(el, "Create Pipeline", {pipeline_id: "", name: "", steps: [
    {step_id: "first", agent_id: ""}, {step_id: "second", agent_id: "", depends_on: ["first"]}]},
  async (d) => {
    const p = await api("POST", "/pipelines", d, {headers: {"Idempotency-Key": key}});
    ctx.notice = `Created pipeline ${p.pipeline_id}.`;
    ctx.go(href(p).slice(ROOT.length));
  });
  return null;
}

export async function render(el, rawId) {
  const id = encodeURIComponent(decodeURIComponent(rawId));
  const params = new URLSearchParams(location.search);
  const o = qs({owner: params.get("owner") || ""});
  const p = await api("GET", `/pipelines/${id}${o}`);
  document.title = `${p.pipeline_id} · cronvisor`;
  if (params.get("edit") === "1" && ctx.canWrite()) {
    const doc = {};
    for (const k of ["name", "description", "steps", "fail_fast", "enabled"]) if (k in p) doc[k] = p[k];
    editor(el, `Edit ${p.pipeline_id}`, doc, async (d) => {
      await api("PATCH", `/pipelines/${id}${o}`, d);
      ctx.notice = `Saved pipeline ${p.pipeline_id}.`;
      ctx.go(href(p).slice(ROOT.length));
    });
    return null;
  }
  const msg = h("div");
  fill(el,
    h("div.d-flex.gap-2.align-items-center.mb-2", {},
      h("h1.h4.mb-0", {id: "pipeline-id"}, p.pipeline_id),
      p.enabled === false ? badge("paused") : null,
      h("span.text-secondary.small", {}, p.owner)),
    p.name ? h("p", {}, p.name) : null, msg,
    ctx.canWrite() ? h("p", {}, h("a.btn.btn-sm.btn-outline-secondary", {id: "edit-pipeline",
      dataset: {nav: ""}, href: href(p) + (href(p).includes("?") ? "&" : "?") + "edit=1"}, "Edit"),
    " ",
    h("button.btn.btn-sm.btn-outline-danger", {type: "button", id: "delete-pipeline",
      onclick: async () => {
        if (!window.confirm(`Delete pipeline ${p.pipeline_id}?`)) return;
        try {
          await api("DELETE", `/pipelines/${id}${o}`);
          ctx.notice = `Deleted pipeline ${p.pipeline_id}.`;
          ctx.go("/scheduler/pipelines");
        } catch (e) {
          fill(msg, alert("danger", e.message));
        }
      }}, "Delete")) : null,
    graph(p.steps || []),
    table(["Step", "Agent", "Depends on", "Runs when", "Parallel"], (p.steps || []).map((x) =>
      [x.step_id, x.agent_id, (x.depends_on || []).join(", "), x.run_when || "success",
        x.parallel === false ? "no" : "yes"]), {id: "steps"}));
  return null;
}
