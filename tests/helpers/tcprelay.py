#!/usr/bin/env python3
"""tcprelay.py: a TCP relay whose link can be cut silently, for the tests.

    tcprelay.py [--listen HOST:PORT] [--port-file FILE] TARGET

Listens on HOST:PORT (default 127.0.0.1:0, a free port; the port chosen is
written to FILE once the relay listens) and forwards each connection to
TARGET: a unix socket (/path or unix:/path) or HOST:PORT (tcp:HOST:PORT).
Python 3's standard library only; one thread, one selector.

Signals:

  SIGUSR1  blackhole: from now on every byte in either direction is read
           and thrown away, on the connections open and on the ones
           accepted meanwhile (those are not forwarded at all: nothing
           reaches TARGET).  No socket is closed, none is shut down, and
           nothing is answered, as when the other host vanished: a client
           sees its writes accepted and never an answer nor an error.  A
           peer that closes its end meanwhile gets no echo of it either:
           the relay keeps the other end open.
  SIGUSR2  forward again.  Every connection open during the blackhole
           (and one accepted during it) is reset at once, both ends (RST,
           SO_LINGER 0), like a host that came back without the state of
           its old connections; new connections are forwarded as usual.
  SIGTERM, SIGINT  exit (every socket closed).

The relay also exits by itself when its parent process is gone, so that
a test killed with SIGKILL leaves no relay behind.  Each event is logged
to stderr with a millisecond time stamp.
"""
import argparse
import errno
import os
import selectors
import signal
import socket
import sys
import time

BUF = 65536
MAX_PENDING = 4 * 1024 * 1024  # bytes queued toward a slow end


def log(msg):
    t = time.time()
    sys.stderr.write("%s.%03d tcprelay: %s\n" % (
        time.strftime("%H:%M:%S", time.localtime(t)), int(t * 1000) % 1000,
        msg))
    sys.stderr.flush()


def parse_target(s):
    if s.startswith("unix:"):
        return socket.AF_UNIX, s[5:]
    if s.startswith("/"):
        return socket.AF_UNIX, s
    if s.startswith("tcp:"):
        s = s[4:]
    host, _, port = s.rpartition(":")
    if not host or not port.isdigit():
        raise SystemExit("tcprelay.py: bad target %r" % s)
    return socket.AF_INET6 if ":" in host else socket.AF_INET, (
        host.strip("[]"), int(port))


class End:
    """One socket of a relayed connection and what waits to be sent to it."""

    def __init__(self, sock, name):
        self.sock = sock
        self.name = name
        self.out = bytearray()
        self.eof = False      # the peer will send nothing more
        self.registered = False


class Conn:
    def __init__(self, n, client, upstream, dropping):
        self.n = n
        self.client = End(client, "client")
        self.upstream = End(upstream, "upstream") if upstream else None
        self.dropping = dropping
        self.bytes_dropped = 0

    def ends(self):
        return [e for e in (self.client, self.upstream) if e is not None]

    def other(self, end):
        return self.upstream if end is self.client else self.client


class Relay:
    def __init__(self, listen, target):
        self.sel = selectors.DefaultSelector()
        self.family, self.addr = target
        host, _, port = listen.rpartition(":")
        host = host.strip("[]") or "127.0.0.1"
        fam = socket.AF_INET6 if ":" in host else socket.AF_INET
        self.lsock = socket.socket(fam, socket.SOCK_STREAM)
        self.lsock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self.lsock.bind((host, int(port or 0)))
        self.lsock.listen(128)
        self.lsock.setblocking(False)
        self.sel.register(self.lsock, selectors.EVENT_READ, None)
        # A signal wakes the selector at once (its handler only notes it).
        self.wake_r, self.wake_w = socket.socketpair()
        self.wake_r.setblocking(False)
        self.wake_w.setblocking(False)
        signal.set_wakeup_fd(self.wake_w.fileno(), warn_on_full_buffer=False)
        self.sel.register(self.wake_r, selectors.EVENT_READ, "wake")
        self.port = self.lsock.getsockname()[1]
        self.conns = {}
        self.count = 0
        self.dropping = False
        self.want = []  # "drop", "forward", "exit", in the signals' order

    # --- the selector ---------------------------------------------------
    def interest(self, conn, end):
        ev = 0
        if not end.eof and not conn.dropping:
            other = conn.other(end)
            if other is None or len(other.out) < MAX_PENDING:
                ev |= selectors.EVENT_READ
        elif conn.dropping and not end.eof:
            ev |= selectors.EVENT_READ
        if end.out and not conn.dropping:
            ev |= selectors.EVENT_WRITE
        if ev and not end.registered:
            self.sel.register(end.sock, ev, (conn, end))
            end.registered = True
        elif ev and end.registered:
            self.sel.modify(end.sock, ev, (conn, end))
        elif not ev and end.registered:
            self.sel.unregister(end.sock)
            end.registered = False

    def refresh(self, conn):
        for e in conn.ends():
            self.interest(conn, e)

    def close(self, conn, reset=False):
        for e in conn.ends():
            if e.registered:
                self.sel.unregister(e.sock)
                e.registered = False
            if reset:
                try:
                    e.sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER,
                                      b"\x01\x00\x00\x00\x00\x00\x00\x00")
                except OSError:
                    pass
            try:
                e.sock.close()
            except OSError:
                pass
        self.conns.pop(conn.n, None)

    # --- events -----------------------------------------------------------
    def accept(self):
        try:
            c, peer = self.lsock.accept()
        except (BlockingIOError, InterruptedError):
            return
        self.count += 1
        n = self.count
        c.setblocking(False)
        if self.dropping:
            conn = Conn(n, c, None, True)
            log("conn %d from %s: accepted into the blackhole" % (n, peer))
        else:
            u = socket.socket(self.family, socket.SOCK_STREAM)
            u.settimeout(5)
            try:
                u.connect(self.addr)
            except OSError as e:
                log("conn %d: cannot reach the target: %s" % (n, e))
                u.close()
                c.close()
                return
            u.setblocking(False)
            if self.family != socket.AF_UNIX:
                u.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            c.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            conn = Conn(n, c, u, False)
            log("conn %d from %s: forwarded" % (n, peer))
        self.conns[n] = conn
        self.refresh(conn)

    def readable(self, conn, end):
        try:
            data = end.sock.recv(BUF)
        except (BlockingIOError, InterruptedError):
            return
        except OSError as e:
            if conn.dropping:
                # A vanished host learns nothing: keep the socket.
                end.eof = True
                self.interest(conn, end)
                return
            log("conn %d: %s: %s; closing" % (conn.n, end.name, e))
            self.close(conn)
            return
        if conn.dropping:
            conn.bytes_dropped += len(data)
            if not data:
                end.eof = True
                log("conn %d: %s closed its end in the blackhole; the other "
                    "end stays open" % (conn.n, end.name))
            self.interest(conn, end)
            return
        other = conn.other(end)
        if not data:
            end.eof = True
            log("conn %d: %s closed" % (conn.n, end.name))
            if not other.out:
                self.close(conn)
            else:
                self.refresh(conn)
            return
        other.out += data
        self.refresh(conn)

    def writable(self, conn, end):
        try:
            n = end.sock.send(end.out)
        except (BlockingIOError, InterruptedError):
            return
        except OSError as e:
            log("conn %d: %s: %s; closing" % (conn.n, end.name, e))
            self.close(conn)
            return
        del end.out[:n]
        if not end.out and conn.other(end).eof:
            log("conn %d: closed" % conn.n)
            self.close(conn)
            return
        self.refresh(conn)

    # --- the modes ------------------------------------------------------
    def blackhole(self):
        if self.dropping:
            return
        self.dropping = True
        for conn in list(self.conns.values()):
            conn.dropping = True
            for e in conn.ends():
                conn.bytes_dropped += len(e.out)
                e.out.clear()
            self.refresh(conn)
        log("SIGUSR1: blackhole (%d connections held silently)"
            % len(self.conns))

    def forward(self):
        if not self.dropping:
            log("SIGUSR2: already forwarding")
            return
        self.dropping = False
        old = [c for c in self.conns.values() if c.dropping]
        dropped = sum(c.bytes_dropped for c in old)
        for conn in old:
            self.close(conn, reset=True)
        log("SIGUSR2: forwarding again; %d connections of the blackhole "
            "reset, %d bytes had been dropped" % (len(old), dropped))

    def run(self):
        parent = os.getppid()
        while True:
            if "exit" in self.want:
                break
            while self.want:
                w = self.want.pop(0)
                if w == "drop":
                    self.blackhole()
                elif w == "forward":
                    self.forward()
            if os.getppid() != parent:
                log("parent %d gone; exiting" % parent)
                break
            for key, ev in self.sel.select(0.1):
                if key.data is None:
                    self.accept()
                    continue
                if key.data == "wake":
                    try:
                        self.wake_r.recv(BUF)
                    except OSError:
                        pass
                    continue
                conn, end = key.data
                if conn.n not in self.conns:
                    continue
                if ev & selectors.EVENT_READ:
                    self.readable(conn, end)
                if conn.n in self.conns and ev & selectors.EVENT_WRITE \
                        and end.registered:
                    self.writable(conn, end)
        for conn in list(self.conns.values()):
            self.close(conn)
        self.lsock.close()
        log("exit")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--listen", default="127.0.0.1:0")
    ap.add_argument("--port-file")
    ap.add_argument("target")
    a = ap.parse_args()
    relay = Relay(a.listen, parse_target(a.target))

    def on(sig, _frame):
        relay.want.append({signal.SIGUSR1: "drop",
                           signal.SIGUSR2: "forward"}.get(sig, "exit"))

    for s in (signal.SIGUSR1, signal.SIGUSR2, signal.SIGTERM, signal.SIGINT,
              signal.SIGHUP):
        signal.signal(s, on)
    log("listening on %s:%d, forwarding to %s" % (
        relay.lsock.getsockname()[0], relay.port, relay.addr))
    if a.port_file:
        tmp = a.port_file + ".tmp"
        with open(tmp, "w") as f:
            f.write("%d\n" % relay.port)
        os.rename(tmp, a.port_file)
    relay.run()


if __name__ == "__main__":
    main()
