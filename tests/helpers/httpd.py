#!/usr/bin/env python3
"""httpd.py: a tiny HTTP server for the engine's http-target tests.

Usage: httpd.py PORTFILE LOGFILE

Listens on 127.0.0.1 on a free port, writes the port to PORTFILE once it
listens, and appends one JSON line per request to LOGFILE: method, path,
headers and body.  The answer depends on the path:

  /fail   500, an empty JSON object (a retryable failure)
  /perm   400, {"retryable": false} (a permanent failure)
  other   200, {"ok": true}

It serves until killed.
"""
import http.server
import json
import os
import sys


class Handler(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def answer(self):
        n = int(self.headers.get("Content-Length") or 0)
        body = self.rfile.read(n).decode("utf-8", "replace") if n else ""
        rec = {"method": self.command, "path": self.path,
               "headers": {k.lower(): v for k, v in self.headers.items()},
               "body": body}
        with open(self.server.logfile, "a", encoding="utf-8") as f:
            f.write(json.dumps(rec) + "\n")
        if self.path.startswith("/fail"):
            code, out = 500, b"{}"
        elif self.path.startswith("/perm"):
            code, out = 400, b'{"retryable": false}'
        else:
            code, out = 200, b'{"ok": true}'
        self.send_response(code)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(out)))
        self.end_headers()
        self.wfile.write(out)

    do_GET = do_POST = do_PUT = answer

    def log_message(self, fmt, *args):
        pass


def main():
    if len(sys.argv) != 3:
        sys.exit("usage: httpd.py PORTFILE LOGFILE")
    srv = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    srv.logfile = sys.argv[2]
    tmp = sys.argv[1] + ".tmp"
    with open(tmp, "w", encoding="utf-8") as f:
        f.write("%d\n" % srv.server_address[1])
    os.rename(tmp, sys.argv[1])
    srv.serve_forever()


if __name__ == "__main__":
    main()
