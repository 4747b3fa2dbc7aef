#!/usr/bin/env python3
"""mcpclient.py: a scripted Model Context Protocol client session against
`cronvisorctl mcp` (tests/cli_mcp.sh): JSON-RPC 2.0, one message a line,
over the server's stdin and stdout, every answer awaited with a bound.

usage: mcpclient.py CRONVISORCTL ALICE-EDITOR ALICE-VIEWER BOB-EDITOR
       (CRONVISOR_URL in the environment: the API behind nginx)

Prints one line per failed check, "created ID" for the schedule it made,
and ends with "mcp: N passed, M failed"; exits 1 if any failed.
"""
import json
import os
import select
import subprocess
import sys
import time

ctl, alice, viewer, bob = sys.argv[1:5]
passed = failed = 0


def ok(name, got, want):
    global passed, failed
    if got == want:
        passed += 1
    else:
        failed += 1
        print("FAIL %s: got %r, want %r" % (name, got, want))


class Server:
    """One `cronvisorctl mcp` with a token."""

    def __init__(self, token):
        env = dict(os.environ, CRONVISOR_TOKEN=token)
        self.p = subprocess.Popen([ctl, "mcp"], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                  env=env, text=True, bufsize=1)
        self.n = 0

    def line(self, text):
        self.p.stdin.write(text + "\n")
        self.p.stdin.flush()

    def answer(self, secs=10):
        r, _, _ = select.select([self.p.stdout], [], [], secs)
        if not r:
            raise SystemExit("no answer within %d s" % secs)
        return json.loads(self.p.stdout.readline())

    def request(self, method, params=None):
        self.n += 1
        msg = {"jsonrpc": "2.0", "id": self.n, "method": method}
        if params is not None:
            msg["params"] = params
        self.line(json.dumps(msg))
        a = self.answer()
        ok("%s: the answer's id" % method, a.get("id"), self.n)
        return a

    def call(self, tool, args):
        a = self.request("tools/call", {"name": tool, "arguments": args})
        r = a.get("result", {})
        text = r.get("content", [{}])[0].get("text", "")
        return r.get("isError"), text

    def close(self):
        self.p.stdin.close()
        return self.p.wait(10)


s = Server(alice)
a = s.request("initialize", {"protocolVersion": "2025-06-18", "capabilities": {},
                             "clientInfo": {"name": "cli_mcp.sh", "version": "1"}})
ok("initialize: the version asked", a["result"]["protocolVersion"], "2025-06-18")
ok("initialize: tools", a["result"]["capabilities"], {"tools": {"listChanged": False}})
ok("initialize: the server", a["result"]["serverInfo"]["name"], "cronvisor")
s.line(json.dumps({"jsonrpc": "2.0", "method": "notifications/initialized"}))
ok("ping", s.request("ping")["result"], {})

tools = {t["name"]: t for t in s.request("tools/list")["result"]["tools"]}
ok("tools/list: the seven tools", sorted(tools), sorted([
    "create_schedule", "list_schedules", "pause_schedule", "resume_schedule",
    "delete_schedule", "preview_schedule", "list_runs"]))
ok("every tool: a description and an object schema",
   all(t["description"] and t["inputSchema"]["type"] == "object" for t in tools.values()), True)
ok("create_schedule requires schedule", tools["create_schedule"]["inputSchema"]["required"], ["schedule"])
ok("pause_schedule requires id", tools["pause_schedule"]["inputSchema"]["required"], ["id"])
ok("list_runs: status is an enum", "succeeded" in tools["list_runs"]["inputSchema"]["properties"]["status"]["enum"], True)

# --- what each tool does --------------------------------------------------------
doc = {"name": "mcp-made", "interval_seconds": 1, "max_retries": 0,
       "target": {"type": "exec", "argv": ["/bin/true"]}}
err, text = s.call("preview_schedule", {"schedule": doc})
ok("preview an unsaved document", (err, "first_fire" in text), (False, True))
err, text = s.call("create_schedule", {"schedule": doc, "idempotency_key": "mcp-k1"})
ok("create_schedule", err, False)
made = json.loads(text)
ok("create_schedule: alice's, active", (made["owner"], made["status"]), ("alice", "active"))
print("created " + made["id"])
err, text = s.call("create_schedule", {"schedule": doc, "idempotency_key": "mcp-k1"})
ok("create_schedule again with the same key: the same schedule", json.loads(text)["id"], made["id"])
err, text = s.call("list_schedules", {"name": "mcp-", "limit": 10})
ok("list_schedules: it, once", [x["id"] for x in json.loads(text)["schedules"]], [made["id"]])
err, text = s.call("preview_schedule", {"id": made["id"]})
ok("preview a saved one", (err, "first_fire" in text), (False, True))

deadline = time.time() + 20
runs = []
while time.time() < deadline:
    err, text = s.call("list_runs", {"schedule_id": made["id"], "status": "succeeded", "limit": 5})
    runs = json.loads(text)["runs"] if not err else []
    if runs:
        break
    time.sleep(0.3)
ok("list_runs: a succeeded run within 20 s", bool(runs) and runs[0]["status"], "succeeded")

err, text = s.call("pause_schedule", {"id": made["id"]})
ok("pause_schedule", (err, json.loads(text).get("status")), (False, "paused"))
err, text = s.call("list_schedules", {"status": "paused"})
ok("list_schedules: paused", made["id"] in [x["id"] for x in json.loads(text)["schedules"]], True)
err, text = s.call("resume_schedule", {"id": made["id"]})
ok("resume_schedule", (err, json.loads(text).get("status")), (False, "active"))

# --- bad arguments: tool errors naming them -------------------------------------------
cases = [
    ("pause_schedule", {}, "id: required"),
    ("pause_schedule", {"id": 5}, "id: expected a string"),
    ("pause_schedule", {"id": "../agents"}, "id: expected a schedule id (a UUID)"),
    ("pause_schedule", {"id": made["id"], "force": True}, "force: not an argument of this tool"),
    ("list_schedules", {"limit": 501}, "limit: expected 1 to 500"),
    ("list_schedules", {"limit": "10"}, "limit: expected an integer"),
    ("list_schedules", {"status": "sleeping"}, 'status: "sleeping" is not one of the allowed values'),
    ("create_schedule", {}, "schedule: required"),
    ("create_schedule", {"schedule": {}, "idempotency_key": "k\r\nX-Injected: yes"},
     "idempotency_key: printable ASCII only, no spaces"),
    ("create_schedule", {"schedule": "every day"}, "schedule: expected an object"),
    ("preview_schedule", {}, "give id (a saved schedule) or schedule (a document), one of them"),
    ("list_runs", {"schedule_id": "x y"}, "schedule_id: expected a schedule id (a UUID)"),
]
for tool, args, want in cases:
    ok("%s %s" % (tool, json.dumps(args)), s.call(tool, args), (True, want))
err, text = s.call("create_schedule", {"schedule": {"name": "bad", "interval_seconds": 0,
                                                    "target": {"type": "exec", "argv": ["/bin/true"]}}})
ok("the API's refusal, its words and field", (err, "(field: interval_seconds)" in text), (True, True))
err, text = s.call("pause_schedule", {"id": "00000000-0000-4000-8000-000000000000"})
ok("an unknown schedule: the API's 404", (err, text), (True, "no such schedule"))

# --- protocol errors ----------------------------------------------------------------------
s.line("this is not json")
ok("not JSON: -32700", s.answer()["error"]["code"], -32700)
s.line(json.dumps({"id": 99, "method": "ping"}))
ok("no jsonrpc: -32600", s.answer()["error"]["code"], -32600)
s.line(json.dumps({"jsonrpc": "2.0", "id": {"x": 1}, "method": "ping"}))
a = s.answer()
ok("an object as id: -32600, id null", (a["error"]["code"], a["id"]), (-32600, None))
s.line(json.dumps({"jsonrpc": "2.0", "id": 97, "method": "initialize", "params": {"protocolVersion": "1999-01-01"}}))
ok("an unknown revision: the server's own", s.answer()["result"]["protocolVersion"], "2025-06-18")
s.line(json.dumps([{"jsonrpc": "2.0", "id": 98, "method": "ping"}]))
ok("a batch: -32600", s.answer()["error"]["code"], -32600)
a = s.request("resources/list")
ok("an unknown method: -32601", a["error"]["code"], -32601)
a = s.request("tools/call", {"name": "drop_database", "arguments": {}})
ok("an unknown tool: -32602", a["error"]["code"], -32602)

# --- roles and tenants ----------------------------------------------------------------------
v = Server(viewer)
v.request("initialize", {"protocolVersion": "2025-06-18", "capabilities": {},
                         "clientInfo": {"name": "viewer", "version": "1"}})
err, text = v.call("create_schedule", {"schedule": dict(doc, name="by-viewer")})
ok("a viewer cannot create", (err, "viewer" in text), (True, True))
err, text = v.call("list_schedules", {"name": "mcp-"})
ok("a viewer lists alice's", [x["id"] for x in json.loads(text)["schedules"]], [made["id"]])
ok("viewer: the server ends with stdin", v.close(), 0)
b = Server(bob)
err, text = b.call("pause_schedule", {"id": made["id"]})
ok("bob cannot pause alice's (it does not exist for him)", (err, text), (True, "no such schedule"))
err, text = b.call("list_schedules", {"name": "mcp-"})
ok("bob does not see it", json.loads(text)["schedules"], [])
ok("bob: the server ends with stdin", b.close(), 0)

err, text = s.call("delete_schedule", {"id": made["id"]})
ok("delete_schedule", err, False)
err, text = s.call("list_schedules", {"name": "mcp-"})
ok("deleted: listed no more", json.loads(text)["schedules"], [])
ok("the server ends with stdin", s.close(), 0)

print("mcp: %d passed, %d failed" % (passed, failed))
sys.exit(1 if failed else 0)
