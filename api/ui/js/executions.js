// Executions: the list, and an execution's page: its jobs counted by
// status, a fan-out's batches planned against actual, its failed jobs
// with their errors and whether they may be retried, "retry failed", and
// a pipeline execution's contexts × steps.

import {api, qs} from "./api.js";
import {ROOT, ctx} from "./app.js";
import {alert, badge, button, facts, fill, h, jsonBlock, link, table, throttle, time} from "./dom.js";
import {graph} from "./pipelines.js";

const statuses = ["running", "success", "partial", "failed"];

export async function renderList(el) {
  document.title = "Executions · cronvisor";
  const params = new URLSearchParams(location.search);
  const status = params.get("status") || "";
  const cursor = params.get("cursor") || "";
  const page = await api("GET", "/executions" + qs({status, cursor, limit: 50}));
  const sel = h("select.form-select.form-select-sm.w-auto", {id: "x-status",
    "aria-label": "Executions with status",
    onchange: () => ctx.go("/executions" + qs({status: sel.value}))},
  h("option", {value: ""}, "all statuses"),
  statuses.map((x) => h("option", {value: x, selected: x === status || null}, x)));
  fill(el,
    h("div.d-flex.gap-2.align-items-center.mb-2", {}, h("h1.h4.mb-0", {}, "Executions"), sel),
    table(["Execution", "Schedule", "Status", "Slot", "Jobs", "Finished"],
      page.executions.map((x) => [
        link(`${ROOT}/executions/${x.id}`, x.id.slice(0, 8)),
        link(`${ROOT}/scheduler/schedules/${x.schedule_id}`, x.schedule_name || x.schedule_id.slice(0, 8)),
        badge(x.status), time(x.slot_at), String(x.jobs_created), time(x.finished_at)]),
      {id: "executions"}),
    h("nav.pager", {}, button("First page", {disabled: !cursor || null,
      onclick: () => ctx.go("/executions" + qs({status}))}), " ",
    button("Next", {id: "x-next", disabled: !page.next_cursor || null,
      onclick: () => ctx.go("/executions" + qs({status, cursor: page.next_cursor}))})));
  return null;
}

function countsRow(c) {
  return h("ul.counts.inline", {}, ["pending", "running", "completed", "failed", "skipped"]
    .map((k) => h("li", {}, badge(k), h("span.n", {dataset: {count: k}}, String((c || {})[k] || 0)))));
}

export async function render(el, id) {
  const x = await api("GET", `/executions/${id}`);
  document.title = `Execution ${id.slice(0, 8)} · cronvisor`;
  const msg = h("div", {id: "x-msg"});
  const fan = (x.metadata && x.metadata.fanout) || null;
  const pipe = x.pipeline || null;
  const failed = await api("GET", `/executions/${id}/jobs` + qs({status: "failed", limit: 100}));
  let grid = null;
  if (pipe) {
    const jobs = await api("GET", `/executions/${id}/jobs` + qs({limit: 500}));
    const steps = pipe.steps.map((st) => st.step_id);
    const cells = new Map();
    for (const j of jobs.jobs) cells.set(`${j.context}/${j.step_id}`, j);
    const contexts = [...new Set(jobs.jobs.map((j) => j.context))].sort((a, b) => a - b);
    grid = h("div", {},
      h("h2.h5.mt-3", {}, `Contexts × steps (${pipe.contexts} contexts)`),
      jobs.next_cursor ? h("p.small.text-secondary", {}, "The first 500 jobs are shown.") : null,
      table(["Context", ...steps], contexts.map((c) => [String(c), ...steps.map((st) => {
        const j = cells.get(`${c}/${st}`);
        return j ? h("span", {title: j.wait_reason || (j.error && j.error.message) || ""},
          badge(j.status)) : "—";
      })]), {id: "contexts"}));
  }
  const plan = x.batches && x.batches.length ? x.batches : null;
  fill(el,
    h("div.d-flex.gap-2.align-items-center.mb-2", {},
      h("h1.h4.mb-0", {}, `Execution ${id.slice(0, 8)}`), badge(x.status)),
    h("p", {}, "Schedule ", link(`${ROOT}/scheduler/schedules/${x.schedule_id}`,
      x.schedule_name || x.schedule_id),
    x.run_id ? [" · run ", link(`${ROOT}/runs/${x.run_id}`, x.run_id)] : null),
    msg,
    ctx.canWrite() && failed.jobs.length ? button("Retry failed", {id: "retry-failed",
      onclick: async () => {
        try {
          const r = await api("POST", `/executions/${id}/retry-failed`);
          ctx.notice = `${r.retried} job(s) go again.`;
          ctx.go(`/executions/${id}`, true);
        } catch (e) {
          fill(msg, alert("danger", e.message));
        }
      }}, "warning") : null,
    h("div.row.g-3.mt-1", {},
      h("div.col-lg-6", {}, facts([
        ["Slot", time(x.slot_at)], ["Created", time(x.created_at)],
        ["Finished", time(x.finished_at)], ["Jobs created", String(x.jobs_created)],
        ["Triggered", x.triggered ? "yes" : "no"],
      ]), h("h2.h6", {}, "Jobs by status"), h("div", {id: "job-counts"}, countsRow(x.jobs))),
      h("div.col-lg-6", {},
        fan ? [h("h2.h6", {}, "Fan-out"), facts([
          ["Param", fan.param], ["Source", fan.source], ["Values", String(fan.values)],
          ["Batches", String(fan.batches)], ["Batch size", String(fan.batch_size)],
          ["Stagger", `${fan.stagger_ms} ms`], ["Planned at", time(x.metadata.planned_at)]])] : null,
        (x.errors || []).length ? [h("h2.h6", {}, "Errors"), jsonBlock(x.errors)] : null)),
    plan ? [h("h2.h5.mt-3", {}, "Batches, planned and actual"),
      table(["Batch", "Planned", "First started", "Late", "Jobs"], plan.map((b) => [
        String(b.batch), time(b.planned_at), time(b.first_started_at),
        b.first_started_at ? `${new Date(b.first_started_at) - new Date(b.planned_at)} ms` : "—",
        countsRow(b.jobs)]), {id: "batches"})] : null,
    pipe ? [h("h2.h5.mt-3", {}, "Steps"), graph(pipe.steps.map((st) => ({
      step_id: st.step_id, agent_id: st.agent_id, depends_on: st.depends_on})),
    Object.fromEntries(pipe.steps.map((st) => [st.step_id, st.jobs])))] : null,
    grid,
    h("h2.h5.mt-3", {}, "Failed jobs"),
    table(["Job", "Item or context", "Attempts", "Error", "Retryable", "Finished"],
      failed.jobs.map((j) => [h("code", {}, j.job_id.slice(0, 8)),
        j.item !== undefined && j.item !== null ? JSON.stringify(j.item)
          : j.context !== null && j.context !== undefined ? `context ${j.context} · ${j.step_id}` : "",
        String(j.attempt_count),
        h("span.err", {}, (j.error && j.error.message) || ""),
        j.error && j.error.retryable === false ? "no" : "yes", time(j.finished_at)]),
      {id: "failed-jobs"}));
  const again = throttle(() => ctx.go(`/executions/${id}`, true), 2000);
  return {
    onEvent(ev) {
      if (ev.subject === id || (ev.type === "job.status" && ev.data && ev.data.execution_id === id))
        again();
    },
    stop: () => again.cancel(),
  };
}
