// Create and edit a schedule: every field of the schedule document
// (docs/schedules.md).  The API validates; its error is shown at the
// field it names.  The cron preview asks the API (POST
// /schedules/preview) for the next fire times and their DST notes as one
// types, in the schedule's zone and in UTC.

import {api, ApiError, newKey} from "./api.js";
import {ROOT, ctx} from "./app.js";
import {alert, debounce, fill, h, table} from "./dom.js";

// [name, label, type, options or help, kinds it belongs to (null: all)]
const fields = [
  ["name", "Name", "text", "1–200 characters", null],
  ["description", "Description", "textarea", "", null],
  ["kind", "Kind", ["interval", "cron", "once"], "", null],
  ["interval_seconds", "Every (seconds)", "int", "1 to 3162240000", ["interval"]],
  ["anchor", "Anchor", ["slot", "completion"], "fixed rate (slot) or fixed delay after each run (completion)", ["interval"]],
  ["cron", "Cron expression", "text", "five fields: minute hour day-of-month month day-of-week, or @daily, @hourly, …", ["cron"]],
  ["at", "At", "text", "RFC 3339, to the millisecond: 2026-12-01T09:00:00.250Z", ["once"]],
  ["timezone", "Time zone", "zone", "an IANA zone; the API's default when empty", null],
  ["start_at", "Start at", "text", "RFC 3339; no slot before it", ["interval", "cron"]],
  ["dst_gap", "DST gap", ["auto", "shift", "skip"], "cron matches inside a spring-forward gap", ["cron"]],
  ["dst_fold", "DST fold", ["auto", "first", "both"], "cron matches inside a repeated hour", ["cron"]],
  ["jitter_seconds", "Jitter (seconds)", "int", "delay each slot by a fixed 0…N s", null],
  ["total_repeats", "Total repeats", "int", "successes after which it is done; 0 = never", null],
  ["max_retries", "Max retries", "int", "0–1000", null],
  ["backoff", "Backoff", ["exponential", "linear", "fixed"], "", null],
  ["retry_delay_seconds", "Retry delay (seconds)", "int", "the base delay of the backoff", null],
  ["timeout_seconds", "Timeout (seconds)", "int", "the API's default when empty", null],
  ["overlap", "Overlap", ["skip", "allow", "buffer_one"], "", null],
  ["catch_up", "Catch-up", ["latest", "all", "none"], "", null],
  ["max_catch_up_runs", "Max catch-up runs", "int", "1–1000", null],
  ["starting_deadline_seconds", "Starting deadline (seconds)", "int", "", null],
  ["history_limit", "History limit", "int", "runs kept", null],
  ["priority", "Priority", "int", "its jobs' priority", null],
  ["workflow_id", "Workflow id", "text", "", null],
  ["trigger_node_id", "Trigger node id", "text", "", null],
  ["organization_id", "Organization id", "text", "", null],
  ["environment_id", "Environment id", "text", "", null],
  ["target", "Target (JSON)", "json", "{\"type\": \"exec\", \"argv\": […]}, http, redis, agent or pipeline; empty: the receiver", null],
  ["limits", "Limits (JSON)", "json", "resource limits of exec runs, e.g. {\"memory_mb\": 256}", null],
  ["trigger_payload", "Trigger payload (JSON)", "json", "data handed to the target with every run", null],
];
const timingFields = ["kind", "interval_seconds", "anchor", "cron", "at",
  "timezone", "start_at", "dst_gap", "dst_fold", "jitter_seconds"];

let zones = null;
function zoneList() {
  if (!zones) {
    zones = h("datalist", {id: "zones"});
    try {
      for (const z of Intl.supportedValuesOf("timeZone")) zones.append(h("option", {value: z}));
    } catch (e) {
      /* an older browser: no suggestions */
    }
  }
  return zones;
}

function control(f, value) {
  const [name, , type] = f;
  const common = {id: "s-" + name, name, "aria-describedby": `h-${name} e-${name}`};
  if (Array.isArray(type))
    return h("select.form-select", common, name === "kind" ? null : h("option", {value: ""}, "default"),
      type.map((o) => h("option", {value: o, selected: o === value || null}, o)));
  if (type === "textarea" || type === "json")
    return h("textarea.form-control.font-monospace", Object.assign({rows: 3,
      spellcheck: "false"}, common), value === undefined || value === null ? ""
      : type === "json" ? JSON.stringify(value, null, 2) : String(value));
  return h("input.form-control", Object.assign({type: "text",
    inputmode: type === "int" ? "numeric" : null, list: type === "zone" ? "zones" : null,
    autocomplete: "off", value: value === undefined || value === null ? "" : String(value)}, common));
}

// The value a control holds, as the document wants it; undefined when
// empty.  Throws {field, message} for JSON that does not parse.
function valueOf(f, el) {
  const [name, , type] = f;
  const raw = el.value;
  if (raw.trim() === "") return undefined;
  if (type === "int") return /^-?\d+$/.test(raw.trim()) ? Number(raw.trim()) : raw;
  if (type === "json") {
    try {
      return JSON.parse(raw);
    } catch (e) {
      throw {field: name, message: "not JSON: " + e.message};
    }
  }
  return raw;
}

async function page(el, original) {
  const editing = !!original;
  const id = editing ? original.id : null;
  document.title = (editing ? `Edit ${original.name}` : "Create Schedule") + " · cronvisor";
  if (!ctx.canWrite()) {
    fill(el, alert("warning", "A viewer token cannot change schedules."));
    return null;
  }
  const controls = {};
  const groups = {};
  const top = h("div", {id: "form-error"});
  const preview = h("div.preview", {id: "preview", "aria-live": "polite"});
  for (const f of fields) {
    const c = control(f, editing ? original[f[0]] : f[0] === "kind" ? "interval" : undefined);
    controls[f[0]] = c;
    groups[f[0]] = h("div.mb-2.field", {dataset: {field: f[0]}},
      h("label.form-label", {for: c.id}, f[1]), c,
      h("div.invalid-feedback", {id: "e-" + f[0]}),
      f[3] ? h("div.form-text", {id: "h-" + f[0]}, f[3]) : null);
  }
  function showKind() {
    const k = controls.kind.value;
    for (const f of fields) groups[f[0]].hidden = !!(f[4] && !f[4].includes(k));
  }
  controls.kind.addEventListener("change", showKind);
  showKind();

  function clearErrors() {
    fill(top);
    for (const n of Object.keys(controls)) {
      controls[n].classList.remove("is-invalid");
      fill(document.getElementById("e-" + n) || h("div"));
    }
  }
  // Shows an error of the API (or of a JSON field) at the field it names.
  function showError(e) {
    const field = e.field || "";
    const base = field.split(/[.[]/)[0];
    const c = controls[base];
    if (c && !groups[base].hidden) {
      c.classList.add("is-invalid");
      fill(document.getElementById("e-" + base), field === base ? e.message : `${field}: ${e.message}`);
      c.focus();
    }
    fill(top, alert("danger", field ? `${field}: ${e.message}` : e.message));
  }

  // The document the form describes: fields of other kinds left out.
  function doc() {
    const d = {};
    const k = controls.kind.value;
    for (const f of fields) {
      if (f[4] && !f[4].includes(k)) continue;
      const v = valueOf(f, controls[f[0]]);
      if (v !== undefined) d[f[0]] = v;
    }
    return d;
  }

  const runPreview = debounce(async () => {
    let d;
    try {
      d = doc();
    } catch (e) {
      return;
    }
    const body = {name: d.name || "preview"};
    for (const k of timingFields) if (k in d) body[k] = d[k];
    if (d.target !== undefined) body.target = d.target;
    try {
      const p = await api("POST", "/schedules/preview", body);
      for (const k of timingFields) {
        controls[k].classList.remove("is-invalid");
        fill(document.getElementById("e-" + k));
      }
      const times = p.next_fire_times || [];
      fill(preview, h("h2.h6", {}, "Next fire times"),
        times.length ? table(["UTC", "In the schedule's zone", "DST note"],
          times.map((t) => [t.utc, `${t.local} ${t.abbr}`, t.note || ""]),
          {id: "preview-times"}) : h("p.text-secondary", {}, "It would not fire."),
        p.jobs !== undefined && p.param ? h("p.small", {},
          `Its first firing would make ${p.count} job(s) from ${p.param}.`) : null);
    } catch (e) {
      if (e instanceof ApiError && timingFields.includes((e.field || "").split(/[.[]/)[0])) {
        const b = e.field.split(/[.[]/)[0];
        controls[b].classList.add("is-invalid");
        fill(document.getElementById("e-" + b), e.message);
      }
      fill(preview, h("h2.h6", {}, "Next fire times"),
        h("p.text-danger", {id: "preview-error"}, e.field ? `${e.field}: ${e.message}` : e.message));
    }
  }, 250);
  for (const k of timingFields) {
    controls[k].addEventListener("input", runPreview);
    controls[k].addEventListener("change", runPreview);
  }

  // One key for this form's create, so a retried POST makes one schedule.
  const key = newKey();
  const save = h("button.btn.btn-primary", {type: "submit", id: "save"},
    editing ? "Save" : "Create");
  const form = h("form", {id: "schedule-form", novalidate: true, onsubmit: async (e) => {
    e.preventDefault();
    clearErrors();
    let d;
    try {
      d = doc();
    } catch (err) {
      showError(err);
      return;
    }
    save.disabled = true;
    try {
      let s;
      if (editing) {
        // Only what changed: a field the kind hides is left alone, unless
        // the kind changed (then it goes back to none); "" is no value.
        const change = {};
        const kind = controls.kind.value;
        for (const f of fields) {
          if (f[4] && !f[4].includes(kind) && original.kind === kind) continue;
          const none = (v) => v === undefined || v === "" ? null : v;
          const was = none(original[f[0]]);
          const now = none(d[f[0]]);
          if (JSON.stringify(was) !== JSON.stringify(now) &&
            !(typeof was === "number" && String(was) === now)) change[f[0]] = now;
        }
        if (!Object.keys(change).length) {
          ctx.notice = "Nothing changed.";
          ctx.go(`/scheduler/schedules/${id}`);
          return;
        }
        s = await api("PATCH", `/schedules/${id}`, change);
        ctx.notice = `Saved "${s.name}".`;
      } else {
        s = await api("POST", "/schedules", d, {headers: {"Idempotency-Key": key}});
        ctx.notice = `Created "${s.name}".`;
      }
      ctx.go(`/scheduler/schedules/${s.id}`);
    } catch (err) {
      showError(err);
      save.disabled = false;
    }
  }},
  top,
  h("div.row", {},
    h("div.col-lg-6", {},
      h("fieldset", {}, h("legend.h6", {}, "What"),
        ["name", "description"].map((n) => groups[n])),
      h("fieldset", {}, h("legend.h6", {}, "When"),
        ["kind", "interval_seconds", "anchor", "cron", "at", "timezone", "start_at",
          "dst_gap", "dst_fold", "jitter_seconds"].map((n) => groups[n]),
        preview)),
    h("div.col-lg-6", {},
      h("fieldset", {}, h("legend.h6", {}, "What runs"),
        ["target", "limits", "trigger_payload"].map((n) => groups[n])),
      h("fieldset", {}, h("legend.h6", {}, "Repeats, retries and policies"),
        ["total_repeats", "max_retries", "backoff", "retry_delay_seconds",
          "timeout_seconds", "overlap", "catch_up", "max_catch_up_runs",
          "starting_deadline_seconds", "history_limit"].map((n) => groups[n])),
      h("fieldset", {}, h("legend.h6", {}, "Identifiers and priority"),
        ["workflow_id", "trigger_node_id", "organization_id", "environment_id",
          "priority"].map((n) => groups[n])))),
  h("div.mt-2", {}, save, " ",
    h("a.btn.btn-outline-secondary", {dataset: {nav: ""},
      href: editing ? `${ROOT}/scheduler/schedules/${id}` : `${ROOT}/scheduler/schedules`}, "Cancel")));
  fill(el, h("h1.h4", {}, editing ? `Edit ${original.name}` : "Create Schedule"),
    zoneList(), form);
  controls.name.focus();
  runPreview();
  return null;
}

export function renderNew(el) {
  return page(el, null);
}

export async function renderEdit(el, id) {
  return page(el, await api("GET", `/schedules/${id}?preview=0`));
}
