// A schedule's page: its settings, status and counts, next fire times,
// pause, resume, run now (with an Idempotency-Key) and delete, and its
// runs and executions with filters.

import {api, newKey, qs} from "./api.js";
import {ROOT, ctx} from "./app.js";
import {alert, badge, button, duration, facts, fill, h, jsonBlock, link, table,
  throttle, time} from "./dom.js";
import {targetType, timing} from "./schedules.js";

const runStatuses = ["running", "succeeded", "failed", "timed_out", "lost",
  "interrupted", "crashed", "protocol_error", "skipped", "missed", "expired"];

// The document's fields in the order a reader wants them.
const docFields = ["description", "kind", "interval_seconds", "anchor", "cron",
  "timezone", "at", "start_at", "dst_gap", "dst_fold", "jitter_seconds",
  "total_repeats", "max_retries", "backoff", "retry_delay_seconds",
  "timeout_seconds", "overlap", "catch_up", "max_catch_up_runs",
  "starting_deadline_seconds", "history_limit", "priority", "workflow_id",
  "trigger_node_id", "organization_id", "environment_id", "apply_set"];

// The runs of a list as table rows.
export function runRows(runs) {
  return runs.map((r) => [
    link(`${ROOT}/runs/${r.id}`, r.id), badge(r.status), time(r.slot_at),
    time(r.started_at), duration(r.duration_ms),
    r.exit_code !== null && r.exit_code !== undefined ? `exit ${r.exit_code}`
      : r.http_status ? `HTTP ${r.http_status}` : r.signal ? `signal ${r.signal}` : "—",
    h("span.err", {}, r.error || r.note || ""),
  ]);
}

export async function render(el, id) {
  const s = await api("GET", `/schedules/${id}?preview=5`);
  document.title = `${s.name} · cronvisor`;
  const msg = h("div", {id: "action-msg"});
  const actions = h("div.actions", {id: "actions"});

  async function act(label, fn) {
    try {
      await fn();
      ctx.notice = label;
      ctx.go(`/scheduler/schedules/${id}`, true);
    } catch (e) {
      fill(msg, alert("danger", e.message));
    }
  }

  if (ctx.canWrite()) {
    if (s.status === "active")
      actions.append(button("Pause", {id: "pause",
        onclick: () => act("Paused.", () => api("POST", `/schedules/${id}/pause`))}), " ");
    if (s.status === "paused")
      actions.append(button("Resume", {id: "resume",
        onclick: () => act("Resumed.", () => api("POST", `/schedules/${id}/resume`))}), " ");
    // One key per click: a retried request (a 503) is one trigger.
    actions.append(button("Run now", {id: "run-now", onclick: async (e) => {
      e.target.disabled = true;
      try {
        const r = await api("POST", `/schedules/${id}/trigger`, {},
          {headers: {"Idempotency-Key": newKey()}});
        fill(msg, alert("success", "Triggered: run ",
          link(`${ROOT}/runs/${r.run_id}`, r.run_id), "."));
        setTimeout(() => loadRuns().catch(() => {}), 500);
      } catch (err) {
        fill(msg, alert("danger", err.message));
      }
      e.target.disabled = false;
    }}, "primary"), " ",
    h("a.btn.btn-sm.btn-outline-secondary", {id: "edit", dataset: {nav: ""},
      href: `${ROOT}/scheduler/schedules/${id}/edit`}, "Edit"), " ",
    button("Delete", {id: "delete", onclick: async () => {
      if (!window.confirm(`Delete "${s.name}" and its history?`)) return;
      try {
        await api("DELETE", `/schedules/${id}`);
        ctx.notice = `Deleted "${s.name}".`;
        ctx.go("/scheduler/schedules");
      } catch (e) {
        fill(msg, alert("danger", e.message));
      }
    }}, "outline-danger"));
  }

  const runFilter = h("select.form-select.form-select-sm.w-auto", {id: "run-status",
    "aria-label": "Runs with status", onchange: () => loadRuns()},
  h("option", {value: ""}, "all statuses"),
  runStatuses.map((x) => h("option", {value: x}, x)));
  const runsEl = h("div", {id: "runs"});
  const moreRuns = h("div");
  const execEl = h("div", {id: "executions"});

  fill(el,
    h("div.d-flex.flex-wrap.gap-2.align-items-center.mb-2", {},
      h("h1.h4.mb-0", {id: "schedule-name"}, s.name), badge(s.status),
      h("span.text-secondary.small", {}, `${s.owner} · ${s.id}`)),
    actions, msg,
    s.unreadable ? alert("danger", s.unreadable) : null,
    h("div.row.g-3.mt-1", {},
      h("div.col-lg-6", {},
        h("h2.h6", {}, "State"),
        facts([
          ["Timing", timing(s)], ["Target", targetType(s)],
          ["Next run", time(s.next_run_at)], ["Last run", time(s.last_run_at)],
          ["Runs", String(s.run_count)], ["Errors", String(s.error_count)],
          ["Repeat", String(s.current_repeat)], ["Retry", String(s.current_retry)],
          ["In flight", String(s.runs_in_flight)],
          ["Last error", s.last_error ? h("span.err", {}, s.last_error) : ""],
          ["Created", time(s.created_at)], ["Updated", time(s.updated_at)],
        ]),
        h("h2.h6.mt-3", {}, "Next fire times"),
        table(["UTC", "Local (schedule's zone)", "Note"],
          (s.next_fire_times || []).map((t) => [t.utc, `${t.local} ${t.abbr}`,
            t.note || ""]), {id: "fire-times"})),
      h("div.col-lg-6", {},
        h("h2.h6", {}, "Settings"),
        facts(docFields.filter((k) => k in s).map((k) => [k,
          s[k] === null ? "" : String(s[k])])),
        h("h3.h6", {}, "target"), jsonBlock(s.target === undefined ? null : s.target),
        h("h3.h6", {}, "limits"), jsonBlock(s.limits || {}),
        h("h3.h6", {}, "trigger_payload"), jsonBlock(s.trigger_payload || {}))),
    h("div.d-flex.gap-2.align-items-center.mt-3", {},
      h("h2.h5.mb-0", {}, "Runs"), runFilter),
    runsEl, moreRuns,
    h("h2.h5.mt-3", {}, "Executions"), execEl);

  async function loadRuns(cursor) {
    const page = await api("GET", `/schedules/${id}/runs` +
      qs({status: runFilter.value, limit: 20, cursor}));
    const t = table(["Run", "Status", "Slot", "Started", "Duration", "Result", "Error or note"],
      runRows(page.runs), {id: "runs-table"});
    if (cursor) runsEl.appendChild(t);
    else fill(runsEl, t);
    fill(moreRuns, page.next_cursor ? button("More runs", {id: "more-runs",
      onclick: () => loadRuns(page.next_cursor)}) : null);
  }
  async function loadExecutions() {
    const page = await api("GET", "/executions" + qs({schedule_id: id, limit: 10}));
    fill(execEl, table(["Execution", "Status", "Slot", "Jobs", "Finished"],
      page.executions.map((x) => [
        link(`${ROOT}/executions/${x.id}`, x.id.slice(0, 8)), badge(x.status),
        time(x.slot_at), String(x.jobs_created ?? ""), time(x.finished_at)]),
      {id: "executions-table"}));
  }
  await Promise.all([loadRuns(), loadExecutions()]);
  // Its status changed: the page again; else its runs and executions.
  let whole = false;
  const again = throttle(() => {
    if (whole) ctx.go(`/scheduler/schedules/${id}`, true);
    else Promise.all([loadRuns(), loadExecutions()]).catch(() => {});
    whole = false;
  }, 1000);
  return {
    onEvent(ev) {
      if (ev.schedule_id !== id) return;
      whole = whole || ev.type === "schedule.status";
      again();
    },
    stop: () => again.cancel(),
  };
}
