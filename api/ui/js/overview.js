// Overview: supervisors alive, schedules by status, runs and executions
// of the last hour and day by outcome (a chart of the day), the oldest
// slot that is due and not started, and the latest failures
// (GET /api/v1/overview).

import {api} from "./api.js";
import {ROOT} from "./app.js";
import {ago, alert, badge, fill, h, link, table, throttle, time} from "./dom.js";

const runColours = {
  succeeded: "#198754", failed: "#dc3545", timed_out: "#fd7e14",
  lost: "#6f42c1", crashed: "#d63384", protocol_error: "#b02a37",
  interrupted: "#ffc107", skipped: "#adb5bd", missed: "#6c757d",
  expired: "#495057",
};

function counts(title, obj, hrefOf) {
  const keys = Object.keys(obj || {}).filter((k) => k !== "total");
  return h("div.card.h-100", {},
    h("div.card-body", {},
      h("h2.h6.card-title", {}, title),
      keys.length ? h("ul.counts", {}, keys.map((k) => h("li", {},
        hrefOf ? link(hrefOf(k), badge(k)) : badge(k),
        h("span.n", {dataset: {count: k}}, String(obj[k])))))
        : h("p.text-secondary.mb-0", {}, "None.")));
}

let chart = null;

function drawChart(canvas, series) {
  if (chart) chart.destroy();
  chart = null;
  if (typeof window.Chart !== "function") return;
  const statuses = new Set();
  for (const b of series) for (const k of Object.keys(b)) if (k !== "at") statuses.add(k);
  const labels = series.map((b) => {
    const d = new Date(b.at);
    return `${String(d.getHours()).padStart(2, "0")}:00`;
  });
  const css = getComputedStyle(document.documentElement);
  const fg = css.getPropertyValue("--cv-fg").trim() || "#212529";
  chart = new window.Chart(canvas, {
    type: "bar",
    data: {labels, datasets: [...statuses].map((s) => ({
      label: s, data: series.map((b) => b[s] || 0),
      backgroundColor: runColours[s] || "#0d6efd", stack: "runs"}))},
    options: {animation: false, responsive: true, maintainAspectRatio: false,
      scales: {x: {stacked: true, ticks: {color: fg}},
        y: {stacked: true, beginAtZero: true, ticks: {color: fg, precision: 0}}},
      plugins: {legend: {labels: {color: fg}}}},
  });
}

export async function render(el) {
  document.title = "Overview · cronvisor";
  const body = h("div");
  fill(el, h("h1.h4", {}, "Overview"), body);
  async function load() {
    const o = await api("GET", "/overview");
    const sup = o.supervisors || {alive: 0, list: []};
    const canvas = h("canvas", {id: "runs-chart", "aria-label":
      "Runs per hour over the last day, by outcome", role: "img"});
    const day = (o.runs && o.runs.day) || {};
    fill(body,
      h("div.row.g-3.mb-3", {},
        h("div.col-md-3", {}, h("div.card.h-100", {}, h("div.card-body", {},
          h("h2.h6.card-title", {}, "Supervisors alive"),
          h("p.display-6.mb-1", {id: "supervisors-alive"}, String(sup.alive)),
          sup.alive ? null : alert("danger", "No supervisor is running: nothing fires."),
          sup.list.length ? h("ul.small.mb-0", {}, sup.list.map((s) =>
            h("li", {}, `${s.name} (${s.version}) — heartbeat `, time(s.heartbeat)))) : null))),
        h("div.col-md-3", {}, counts("Schedules", o.schedules,
          (k) => `${ROOT}/scheduler/schedules?status=${k}`)),
        h("div.col-md-3", {}, counts("Runs, last hour", o.runs && o.runs.hour)),
        h("div.col-md-3", {}, counts("Executions, last hour",
          o.executions && o.executions.hour))),
      h("div.row.g-3.mb-3", {},
        h("div.col-lg-8", {}, h("div.card", {}, h("div.card-body", {},
          h("h2.h6.card-title", {}, "Runs per hour, last day"),
          h("div.chart", {}, canvas)))),
        h("div.col-lg-4", {},
          counts("Runs, last day", day),
          h("div.mt-3", {}, counts("Executions, last day",
            o.executions && o.executions.day)))),
      h("div.card.mb-3", {}, h("div.card-body", {},
        h("h2.h6.card-title", {}, "Oldest due slot not started"),
        o.oldest_due
          ? h("p.mb-0", {id: "oldest-due"},
            link(`${ROOT}/scheduler/schedules/${o.oldest_due.schedule_id}`,
              o.oldest_due.name), " was due ", time(o.oldest_due.next_run_at),
            ` (${ago(o.oldest_due.next_run_at)})`)
          : h("p.mb-0.text-secondary", {id: "oldest-due"}, "Nothing is waiting."))),
      h("h2.h5", {}, "Recent failures"),
      table(["Run", "Schedule", "Status", "Finished", "Error"],
        (o.recent_failures || []).map((f) => [
          link(`${ROOT}/runs/${f.run_id}`, f.run_id),
          link(`${ROOT}/scheduler/schedules/${f.schedule_id}`, f.schedule_name),
          badge(f.status), time(f.finished_at), h("span.err", {}, f.error || ""),
        ]), {id: "failures"}));
    drawChart(canvas, (o.runs && o.runs.series) || []);
  }
  await load();
  // Drawn again at most every 2 s while events come (the rollup they
  // count is written as they are numbered).
  const again = throttle(() => load().catch(() => {}), 2000);
  return {
    onEvent(ev) {
      if (/^(run\.ended|schedule\.status|execution\.status)$/.test(ev.type)) again();
    },
    stop() {
      again.cancel();
      if (chart) chart.destroy();
      chart = null;
    },
  };
}
