// A run's page (GET /api/v1/runs/{id}): what ran, how it ended, its
// output, exit code or HTTP status, times, CPU and memory, note and error.

import {api} from "./api.js";
import {ROOT} from "./app.js";
import {badge, duration, facts, fill, h, link, time} from "./dom.js";

export async function render(el, id) {
  const r = await api("GET", `/runs/${encodeURIComponent(id)}`);
  document.title = `${r.id} · cronvisor`;
  const num = (v, unit) => v === null || v === undefined ? "" : `${v} ${unit}`;
  fill(el,
    h("div.d-flex.flex-wrap.gap-2.align-items-center.mb-2", {},
      h("h1.h4.mb-0", {id: "run-id"}, r.id), badge(r.status),
      r.triggered ? h("span.badge.text-bg-info", {}, "triggered") : null),
    h("p", {}, "Schedule ", link(`${ROOT}/scheduler/schedules/${r.schedule_id}`,
      r.schedule_id),
    r.job_id ? [" · job ", h("code", {}, r.job_id)] : null),
    h("div.row", {},
      h("div.col-lg-6", {}, facts([
        ["Slot", time(r.slot_at)], ["Started", time(r.started_at)],
        ["Finished", time(r.finished_at)], ["Duration", duration(r.duration_ms)],
        ["Repeat", String(r.repeat_number)], ["Attempt", String(r.attempt)],
        ["Exit code", r.exit_code === null || r.exit_code === undefined ? "" : String(r.exit_code)],
        ["Signal", r.signal ? String(r.signal) : ""],
        ["HTTP status", r.http_status ? String(r.http_status) : ""],
      ])),
      h("div.col-lg-6", {}, facts([
        ["CPU user", num(r.cpu_user_ms, "ms")], ["CPU system", num(r.cpu_sys_ms, "ms")],
        ["Max memory", num(r.max_rss_kb, "KiB")], ["Supervisor", r.supervisor || ""],
        ["Note", r.note ? h("span.note", {}, r.note) : ""],
        ["Error", r.error ? h("span.err", {id: "run-error"}, r.error) : ""],
      ]))),
    h("h2.h5", {}, "Output"),
    r.output ? h("pre.output", {id: "run-output", tabindex: "0"}, r.output)
      : h("p.text-secondary", {id: "run-output"}, "No output."));
  return {
    onEvent(ev) {
      if (ev.subject === r.id && ev.type === "run.ended") render(el, id);
    },
  };
}
