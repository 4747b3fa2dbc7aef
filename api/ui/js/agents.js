// Agents: the registry, an agent's versions, its deployments per
// environment with deploy, promote and roll back, and its health history
// (GET /api/v1/agents and the routes under /agents/{id}).

import {api, qs} from "./api.js";
import {ROOT, ctx} from "./app.js";
import {alert, badge, button, facts, fill, h, jsonBlock, link, table, time} from "./dom.js";

function health(a) {
  return a.healthy === null || a.healthy === undefined ? h("span.text-secondary", {}, "not probed")
    : badge(a.healthy ? "healthy" : "unhealthy");
}

// The agent's address in the console; an admin's carries its owner.
export function agentHref(owner, id) {
  return `${ROOT}/agents/${encodeURIComponent(id)}` + (ctx.isAdmin() ? qs({owner}) : "");
}

export async function renderList(el) {
  document.title = "Agents · cronvisor";
  const page = await api("GET", "/agents" + qs({limit: 500}));
  fill(el, h("h1.h4", {}, "Agents"),
    table(["Agent", "Name", "Owner", "Enabled", "Deployments", "Health"],
      page.agents.map((a) => [
        link(agentHref(a.owner, a.agent_id), a.agent_id), a.name, a.owner,
        a.enabled ? "yes" : "no",
        Object.entries(a.deployments || {}).map(([env, v]) => `${env}: ${v}`).join(", ") || "—",
        health(a)]), {id: "agents"}),
    page.next_cursor ? h("p.small.text-secondary", {}, "The first 500 are shown.") : null);
  return null;
}

export async function render(el, rawId) {
  const id = encodeURIComponent(decodeURIComponent(rawId));
  const owner = new URLSearchParams(location.search).get("owner") || "";
  const o = qs({owner});
  const [a, versions, deps, hl] = await Promise.all([
    api("GET", `/agents/${id}${o}`), api("GET", `/agents/${id}/versions${o}`),
    api("GET", `/agents/${id}/deployments${o}`), api("GET", `/agents/${id}/health${o}`)]);
  document.title = `${a.agent_id} · cronvisor`;
  const msg = h("div", {id: "agent-msg"});
  async function act(path, body, done) {
    try {
      await api("POST", `/agents/${id}/${path}${o}`, body);
      ctx.notice = done;
      ctx.go(location.pathname.slice(ROOT.length) + location.search, true);
    } catch (e) {
      fill(msg, alert("danger", e.field ? `${e.field}: ${e.message}` : e.message));
    }
  }
  const envs = Object.keys(deps.deployments || {});
  const vlist = (versions.versions || []).map((v) => v.version);
  const sel = (id2, opts, label) => h("select.form-select.form-select-sm.w-auto",
    {id: id2, "aria-label": label}, opts.map((x) => h("option", {value: x}, x)));
  let controls = null;
  if (ctx.canWrite()) {
    const dv = sel("deploy-version", vlist, "Version");
    const de = h("input.form-control.form-control-sm.w-auto", {id: "deploy-env",
      "aria-label": "Environment", value: "production"});
    const pf = sel("promote-from", envs, "From environment");
    const pt = h("input.form-control.form-control-sm.w-auto", {id: "promote-to",
      "aria-label": "To environment", value: "production"});
    const re = sel("rollback-env", envs, "Environment");
    controls = h("div.card.mb-3", {}, h("div.card-body.d-flex.flex-wrap.gap-3", {},
      h("div.d-flex.gap-1.align-items-center", {}, "Deploy", dv, "to", de,
        button("Deploy", {id: "deploy", disabled: !vlist.length || null, onclick: () =>
          act("deploy", {version: dv.value, environment: de.value}, `Deployed ${dv.value}.`)})),
      h("div.d-flex.gap-1.align-items-center", {}, "Promote", pf, "to", pt,
        button("Promote", {id: "promote", disabled: !envs.length || null, onclick: () =>
          act("promote", {from: pf.value, to: pt.value}, `Promoted ${pf.value} to ${pt.value}.`)})),
      h("div.d-flex.gap-1.align-items-center", {}, "Roll back", re,
        button("Roll back", {id: "rollback", disabled: !envs.length || null, onclick: () =>
          act("rollback", {environment: re.value}, `Rolled back ${re.value}.`)}))));
  }
  fill(el,
    h("div.d-flex.gap-2.align-items-center.mb-2", {},
      h("h1.h4.mb-0", {id: "agent-id"}, a.agent_id), health(a),
      h("span.text-secondary.small", {}, a.owner)),
    msg, controls,
    h("div.row.g-3", {},
      h("div.col-lg-6", {}, facts([
        ["Name", a.name], ["Description", a.description], ["Endpoint", a.endpoint],
        ["Enabled", a.enabled ? "yes" : "no"], ["Timeout", `${a.timeout_ms} ms`],
        ["Max concurrent requests", String(a.max_concurrent_requests)],
        ["Heartbeat", a.heartbeat_seconds ? `${a.heartbeat_seconds} s` : ""],
        ["Auth", a.auth ? a.auth.type + (a.auth.secret_set ? " (secret set)" : "") : ""],
        ["Health error", a.health_error ? h("span.err", {}, a.health_error) : ""],
        ["Created by", a.created_by], ["Updated", time(a.updated_at)],
      ]), h("h2.h6", {}, "Input schema"), jsonBlock(a.input_schema ?? null)),
      h("div.col-lg-6", {},
        h("h2.h6", {}, "Deployments"),
        table(["Environment", "Version", "By", "At"], envs.map((env) => {
          const d = deps.deployments[env];
          return [env, d.version, d.deployed_by || "", time(d.deployed_at)];
        }), {id: "deployments"}),
        h("h2.h6", {}, "Versions"),
        table(["Version", "Endpoint", "Runs in", "Created"], (versions.versions || []).map((v) =>
          [v.version, v.endpoint, (v.environments || []).join(", "), time(v.created_at)]),
        {id: "versions"}),
        h("h2.h6", {}, "Deployment history"),
        table(["Environment", "Action", "Version", "Replaced", "By", "At"],
          (deps.history || []).slice(0, 20).map((x) => [x.environment, x.action,
            x.version, x.previous || "", x.by || "", time(x.at)]),
          {id: "deploy-history"}))),
    h("h2.h5.mt-3", {}, "Health"),
    h("p", {}, hl.url ? ["Probed at ", h("code", {}, hl.url), ", next ", time(hl.next_at)]
      : "No health URL."),
    table(["Checked", "Result", "HTTP status", "Latency", "Error"],
      (hl.probes || []).slice(0, 50).map((p) => [time(p.checked_at),
        badge(p.ok ? "healthy" : "unhealthy"), p.http_status ? String(p.http_status) : "—",
        p.latency_ms === null || p.latency_ms === undefined ? "—" : `${p.latency_ms} ms`,
        h("span.err", {}, p.error || "")]),
      {id: "health"}));
  return null;
}
