#!/usr/bin/env python3
"""Helpers of bench/run.sh (Python standard library only).

    bench.py port PID                     the TCP port PID listens on (loopback), waiting up to 20 s
    bench.py measure --out F --case C --label L [--rep N] [--pid NAME=PID[+]]... [--perf NAME --perf-out F]
                     -- MCPGW load ARGS...
                                          one `mcpgw load` run with the CPU time of the generator (wait4)
                                          and of each named process (/proc/PID/stat utime+stime; `+`: with
                                          its descendants) over the run; one JSON line appended to F
    bench.py sessions --url URL --admin-url URL --pid PID --counts 10000,100000 --out F [--also-at N]
                      [--max-sessions N] [--sample N] [--replica-url URL --replica-admin-url URL] [--max-seconds S]
                                          opens legacy sessions (initialize + initialized) and keeps them
                                          idle; RSS of PID before and after each count, then a sample pinged
                                          (rebuilt from their ids when they rested; --replica-url: another
                                          replica with the same key ring pinged too)
    bench.py section-d --results F        the (d) section of the report alone
    bench.py silent [--mode never|list-hangs] [--announce-every S]
                                          a backend that accepts connections and never answers (never), or
                                          answers server/discover and subscriptions/listen, announces a tools
                                          list change every S seconds and never answers a list (list-hangs)
    bench.py report --results F --meta F --out F [--quick]
                                          the Markdown report from the JSON lines
"""

import argparse
import array
import http.client
import json
import math
import multiprocessing
import os
import resource
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import urllib.parse
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

TICK = os.sysconf("SC_CLK_TCK")
PAGE_KIB = os.sysconf("SC_PAGE_SIZE") // 1024


# --- /proc -------------------------------------------------------------------------------------------

def cpu_seconds(pid):
    """utime + stime of one process (all its threads), in seconds; None when it is gone."""
    times = cpu_times(pid)
    return None if times is None else times[0] + times[1]


def cpu_times(pid):
    """(utime, stime) of one process (all its threads), in seconds: user space and the kernel on its behalf;
    None when it is gone."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            fields = f.read().rsplit(")", 1)[1].split()
        return int(fields[11]) / TICK, int(fields[12]) / TICK
    except (OSError, IndexError, ValueError):
        return None


def machine_busy_seconds():
    """CPU seconds the whole machine spent busy (all cores), from /proc/stat."""
    with open("/proc/stat") as f:
        fields = f.readline().split()[1:]
    user, nice, system, idle, iowait, irq, softirq, steal = (int(x) for x in fields[:8])
    return (user + nice + system + irq + softirq + steal) / TICK


def threads(pid):
    """{thread name: cpu seconds} and the context switches (voluntary + not) of every thread of pid."""
    by_comm, switches = {}, 0
    try:
        tasks = os.listdir(f"/proc/{pid}/task")
    except OSError:
        return by_comm, None
    for t in tasks:
        try:
            with open(f"/proc/{pid}/task/{t}/stat") as f:
                raw = f.read()
            comm = raw[raw.index("(") + 1:raw.rindex(")")]
            fields = raw.rsplit(")", 1)[1].split()
            by_comm[comm] = by_comm.get(comm, 0.0) + (int(fields[11]) + int(fields[12])) / TICK
            with open(f"/proc/{pid}/task/{t}/status") as f:
                for line in f:
                    if line.startswith(("voluntary_ctxt_switches", "nonvoluntary_ctxt_switches")):
                        switches += int(line.split()[1])
        except (OSError, ValueError, IndexError):
            continue
    return by_comm, switches


def descendants(pid):
    """pid and every process below it."""
    out, todo = [], [pid]
    while todo:
        p = todo.pop()
        out.append(p)
        try:
            for task in os.listdir(f"/proc/{p}/task"):
                with open(f"/proc/{p}/task/{task}/children") as f:
                    todo.extend(int(c) for c in f.read().split())
        except OSError:
            pass
    return out


def rss_kib(pid):
    """VmRSS of pid in KiB."""
    try:
        with open(f"/proc/{pid}/status") as f:
            for line in f:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1])
    except OSError:
        pass
    return None


def smaps_rollup(pid):
    """The KiB lines of /proc/PID/smaps_rollup (Rss, Anonymous, ...)."""
    out = {}
    try:
        with open(f"/proc/{pid}/smaps_rollup") as f:
            for line in f:
                parts = line.split()
                if len(parts) == 3 and parts[2] == "kB":
                    out[parts[0].rstrip(":")] = int(parts[1])
    except OSError:
        pass
    return out


def listening_ports(pid):
    inodes = set()
    try:
        for fd in os.listdir(f"/proc/{pid}/fd"):
            try:
                link = os.readlink(f"/proc/{pid}/fd/{fd}")
            except OSError:
                continue
            if link.startswith("socket:["):
                inodes.add(link[8:-1])
    except OSError:
        return []
    ports = []
    for table in ("tcp", "tcp6"):
        try:
            with open(f"/proc/{pid}/net/{table}") as f:
                next(f)
                for line in f:
                    p = line.split()
                    if p[3] == "0A" and p[9] in inodes:
                        ports.append(int(p[1].rsplit(":", 1)[1], 16))
        except OSError:
            pass
    return ports


def cmd_port(args):
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline:
        ports = listening_ports(args.pid)
        if ports:
            print(ports[0])
            return 0
        if not os.path.exists(f"/proc/{args.pid}"):
            break
        time.sleep(0.1)
    print(f"bench.py port: process {args.pid} listens on no TCP port", file=sys.stderr)
    return 1


# --- one load run ------------------------------------------------------------------------------------

def cmd_measure(args):
    procs = {}
    for spec in args.pid:
        name, pid = spec.split("=", 1)
        tree = pid.endswith("+")
        procs[name] = (int(pid.rstrip("+")), tree)

    def sample():
        out = {}
        for name, (pid, tree) in procs.items():
            pids = descendants(pid) if tree else [pid]
            vals = [v for v in (cpu_times(p) for p in pids) if v is not None]
            out[name] = (sum(u + k for u, k in vals), threads(pid), sum(k for _, k in vals))
        return out

    cmd = args.command
    if cmd and cmd[0] == "--":
        cmd = cmd[1:]
    fd, json_path = tempfile.mkstemp(prefix="bench-load-", suffix=".json")
    os.close(fd)
    cmd = cmd + ["--json", json_path, "--no-progress"]
    before = sample()
    busy0 = machine_busy_seconds()
    t0 = time.monotonic()
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    perf = None
    if args.perf and args.perf in procs and shutil_which("perf"):
        # Sample the named process for a few seconds once the load is under way.
        time.sleep(args.perf_delay)
        perf = subprocess.Popen(
            ["perf", "record", "-F", "499", "-g", "-o", args.perf_out + ".data", "-p",
             str(procs[args.perf][0]), "--", "sleep", str(args.perf_seconds)],
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    timer = threading.Timer(args.kill_after, lambda: proc.kill())
    timer.start()
    output = proc.stdout.read()
    _, status, usage = os.wait4(proc.pid, 0)
    timer.cancel()
    wall = time.monotonic() - t0
    after = sample()
    busy = machine_busy_seconds() - busy0
    if perf is not None:
        try:
            perf.wait(timeout=args.perf_seconds + 30)
        except subprocess.TimeoutExpired:
            perf.kill()
        perf_report(args.perf_out + ".data", args.perf_out)
    sys.stdout.write(output)
    sys.stdout.flush()
    try:
        with open(json_path) as f:
            report = json.load(f)
    except (OSError, ValueError):
        report = None
    finally:
        try:
            os.unlink(json_path)
        except OSError:
            pass
    cpu = {"generator": usage.ru_utime + usage.ru_stime}
    for name in procs:
        cpu[name] = max(0.0, after[name][0] - before[name][0])
    # Everything else the machine did meanwhile (other work on a shared machine, perf, the kernel's own).
    cpu["other"] = max(0.0, busy - sum(cpu.values()))
    # Of each named process's CPU, the kernel's part (stime: its system calls, TCP, wake-ups).
    kernel = {name: max(0.0, after[name][2] - before[name][2]) for name in procs}
    per_thread, switches = {}, {}
    for name in procs:
        b_threads, b_sw = before[name][1]
        a_threads, a_sw = after[name][1]
        per_thread[name] = {c: round(a_threads[c] - b_threads.get(c, 0.0), 3) for c in a_threads}
        switches[name] = (a_sw - b_sw) if (a_sw is not None and b_sw is not None) else None
    record = {
        "threads_cpu_s": per_thread,
        "ctxt_switches": switches,
        "case": args.case,
        "label": args.label,
        "rep": args.rep,
        "wall_s": wall,
        "exit": os.waitstatus_to_exitcode(status),
        "cpu_s": cpu,
        "sys_s": kernel,
        "cores": {k: v / wall for k, v in cpu.items()},
        "rss_kib": {name: rss_kib(pid) for name, (pid, _) in procs.items()},
        "load": report,
    }
    with open(args.out, "a") as f:
        f.write(json.dumps(record) + "\n")
    if report is None:
        print(f"bench.py measure: {args.case}/{args.label}: mcpgw load wrote no report "
              f"(exit {record['exit']})", file=sys.stderr)
        return 1
    return 0


def shutil_which(name):
    for d in os.environ.get("PATH", "").split(":"):
        p = os.path.join(d, name)
        if os.access(p, os.X_OK):
            return p
    return None


THREADS = {"mcpgw": "the main thread (backend actors: connections, reconnects, subscriptions)",
           "actix-rt|system": "HTTP worker threads (front door and its requests to backends)"}
CLIENT_CRATES = {"hyper", "hyper_util", "reqwest", "h2", "http", "http_body", "http_body_util", "want",
                 "tower", "tower_service", "ipnet", "idna", "url", "httparse"}
ACTIX_CRATES = {"actix_http", "actix_web", "actix_server", "actix_rt", "actix", "actix_router",
                "actix_service", "actix_codec", "actix_utils"}


def symbol_bucket(dso, sym):
    s = sym[4:] if sym.startswith("[") else sym
    low = s.lower()
    if "kernel" in dso:
        if any(k in low for k in ("tcp", "ip_", "ipv4", "skb", "sock", "net_", "netif", "napi", "inet",
                                  "dev_", "loopback", "sk_", "__sys_send", "__sys_recv", "rps_")):
            return "kernel: TCP over loopback"
        if any(k in low for k in ("sched", "switch", "futex", "wake", "epoll", "ep_", "pick_next",
                                  "enqueue", "dequeue", "task", "idle", "update_curr", "rq", "hrtimer")):
            return "kernel: scheduling, wake-ups, futex, epoll"
        if any(k in low for k in ("spin", "irq")):
            return "kernel: spinlocks, irq (mostly wake-ups and TCP)"
        return "kernel: other (syscall entry, copies, ...)"
    if "libc" in dso:
        if any(k in low for k in ("malloc", "free", "_int_", "realloc", "calloc", "tcache", "consolidate")):
            return "libc: malloc/free"
        if "mem" in low:
            return "libc: memcpy/memmove/memset"
        return "libc: other"
    if dso.startswith("mcpgw"):
        t = s.lstrip("<&*(")
        if t.startswith("impl "):
            t = t[5:]
        crate = t.split("::", 1)[0].split("<", 1)[0].strip()
        if crate in CLIENT_CRATES:
            return "mcpgw: HTTP client to the backend (reqwest, hyper, http)"
        if crate in ACTIX_CRATES:
            return "mcpgw: actix (HTTP server, actors)"
        if crate in ("tokio", "mio", "tokio_util"):
            return "mcpgw: tokio"
        if crate in ("serde_json", "serde"):
            return "mcpgw: serde_json"
        if crate in ("protocol",):
            return "mcpgw: protocol (validate, shape)"
        if crate in ("gateway", "handlers"):
            return f"mcpgw: {crate} crate"
        if crate in ("core", "alloc", "std", "hashbrown", "bytes", "smallvec", "memchr"):
            return "mcpgw: std/core/alloc/bytes (clones, formatting, maps)"
        if crate.startswith("tracing"):
            return "mcpgw: tracing"
        return "mcpgw: other crates"
    return f"other: {dso}"


def perf_report(data, out):
    """Where the process's time goes: by thread, by kind (kernel TCP / scheduling, malloc, crates), top symbols."""
    try:
        r = subprocess.run(
            ["perf", "report", "-i", data, "--stdio", "--no-children", "-g", "none", "--percent-limit", "0",
             "--sort", "comm,dso,symbol", "-t", ","],
            capture_output=True, text=True, timeout=180)
    except (OSError, subprocess.TimeoutExpired):
        return
    rows = []
    for line in r.stdout.splitlines():
        if not line.strip() or line.lstrip().startswith("#"):
            continue
        body = line.rsplit(",", 1)[0] if line.rstrip().endswith("-") else line
        parts = body.split(",", 3)
        if len(parts) < 4:
            continue
        try:
            pct = float(parts[0].strip().rstrip("%"))
        except ValueError:
            continue
        rows.append((pct, parts[1].strip(), parts[2].strip(), parts[3].strip()))
    if not rows:
        return
    total = sum(r[0] for r in rows) or 1.0

    def table(key):
        acc = {}
        for pct, comm, dso, sym in rows:
            k = key(comm, dso, sym)
            acc[k] = acc.get(k, 0.0) + pct
        return sorted(acc.items(), key=lambda kv: -kv[1])

    text = [f"perf record -F 499 -g on the gateway process, 3 s during the run ({len(rows)} distinct symbols)", "",
            "by thread:"]
    for k, v in table(lambda c, d, s: THREADS.get(c, c)):
        text.append(f"  {100 * v / total:5.1f}%  {k}")
    text += ["", "by kind:"]
    for k, v in table(lambda c, d, s: symbol_bucket(d, s)):
        if 100 * v / total >= 0.5:
            text.append(f"  {100 * v / total:5.1f}%  {k}")
    text += ["", "top symbols (self time):"]
    top = sorted(((p, c, d, sy) for p, c, d, sy in rows), key=lambda r: -r[0])[:20]
    for pct, comm, dso, sym in top:
        sym = sym[4:] if sym.startswith("[") else sym
        if len(sym) > 110:
            sym = sym[:107] + "..."
        text.append(f"  {100 * pct / total:5.1f}%  {comm:<16} {sym}")
    with open(out, "w") as f:
        f.write("\n".join(text) + "\n")
    try:
        os.unlink(data)
    except OSError:
        pass


# --- idle legacy sessions ------------------------------------------------------------------------------

INIT_BODY = json.dumps({
    "jsonrpc": "2.0", "id": 1, "method": "initialize",
    "params": {"protocolVersion": "2025-11-25", "capabilities": {},
               "clientInfo": {"name": "bench-sessions", "version": "1"}}}).encode()
INITIALIZED_BODY = b'{"jsonrpc":"2.0","method":"notifications/initialized"}'
PING_BODY = b'{"jsonrpc":"2.0","id":2,"method":"ping"}'


class _Pipe:
    """One keep-alive HTTP/1.1 connection on which requests are pipelined: written together, their responses
    read in order (status, headers, Content-Length or chunked body). Much cheaper per request than
    http.client, so that the driver is not what bounds the rate at which sessions open."""

    def __init__(self, host, port):
        self.sock = socket.create_connection((host, port), timeout=30)
        self.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self.rf = self.sock.makefile("rb", buffering=1 << 16)

    def close(self):
        try:
            self.rf.close()
            self.sock.close()
        except OSError:
            pass

    def response(self):
        """(status, {lower-case header: value}, body)."""
        line = self.rf.readline(65537)
        if not line:
            raise ConnectionError("connection closed")
        status = int(line.split(None, 2)[1])
        headers = {}
        while True:
            line = self.rf.readline(65537)
            if line in (b"\r\n", b"\n", b""):
                break
            k, _, v = line.decode("latin-1").partition(":")
            headers[k.strip().lower()] = v.strip()
        if headers.get("transfer-encoding", "").lower() == "chunked":
            body = b""
            while True:
                size = int(self.rf.readline(65537).split(b";")[0], 16)
                body += self.rf.read(size)
                self.rf.readline(65537)
                if size == 0:
                    break
        else:
            body = self.rf.read(int(headers.get("content-length", "0")))
        return status, headers, body


def _request(host, port, path, body, sid=None):
    extra = f"Mcp-Session-Id: {sid}\r\nMCP-Protocol-Version: 2025-11-25\r\n" if sid else ""
    return (f"POST {path} HTTP/1.1\r\nHost: {host}:{port}\r\nContent-Type: application/json\r\n"
            f"Accept: application/json, text/event-stream\r\n{extra}Content-Length: {len(body)}\r\n\r\n"
            ).encode() + body


def _open_sessions(job):
    """One worker: opens `count` sessions over one keep-alive connection, `depth` at a time (their initialize
    requests pipelined, then their notifications/initialized), stopping at `deadline` (time.monotonic, the same
    clock in every process); returns (ids, when each was opened, errors, seconds)."""
    host, port, path, count, deadline, depth = job
    init = _request(host, port, path, INIT_BODY)
    pipe = _Pipe(host, port)
    ids, stamps, errors = [], array.array("d"), 0
    t0 = time.monotonic()
    left = count
    while left > 0 and errors <= 1000 and (deadline is None or time.monotonic() <= deadline):
        k = min(depth, left)
        left -= k
        try:
            pipe.sock.sendall(init * k)
            sids = []
            for _ in range(k):
                status, headers, _ = pipe.response()
                sid = headers.get("mcp-session-id")
                if status == 200 and sid:
                    sids.append(sid)
                else:
                    errors += 1
            pipe.sock.sendall(b"".join(_request(host, port, path, INITIALIZED_BODY, sid) for sid in sids))
            for sid in sids:
                status, _, _ = pipe.response()
                if status == 202:
                    ids.append(sid)
                    stamps.append(time.monotonic())
                else:
                    errors += 1
        except (OSError, ValueError, IndexError):
            errors += k
            pipe.close()
            pipe = _Pipe(host, port)
    pipe.close()
    return ids, stamps, errors, time.monotonic() - t0


def _session_requests(host, port, path, ids, method):
    """Sends ping (POST) or DELETE on each session; returns the statuses."""
    conn = http.client.HTTPConnection(host, port, timeout=30)
    statuses = []
    for sid in ids:
        h = {"Content-Type": "application/json", "Accept": "application/json, text/event-stream",
             "Mcp-Session-Id": sid, "MCP-Protocol-Version": "2025-11-25"}
        try:
            if method == "DELETE":
                conn.request("DELETE", path, headers=h)
            else:
                conn.request("POST", path, PING_BODY, h)
            r = conn.getresponse()
            r.read()
            statuses.append(r.status)
        except (OSError, http.client.HTTPException):
            statuses.append(None)
            conn.close()
            conn = http.client.HTTPConnection(host, port, timeout=30)
    conn.close()
    return statuses


def _open_many(pool, host, port, path, n, workers, deadline=None, depth=1):
    per = [n // workers + (1 if i < n % workers else 0) for i in range(workers)]
    t0 = time.monotonic()
    results = pool.map(_open_sessions, [(host, port, path, c, deadline, depth) for c in per if c])
    elapsed = time.monotonic() - t0
    ids = [sid for r in results for sid in r[0]]
    stamps = [t for r in results for t in r[1]]
    errors = sum(r[2] for r in results)
    return ids, stamps, errors, elapsed


def readyz(url):
    """The /readyz body of the gateway's admin listener at `url` (its session counters: the front door's says the
    status alone), or {} when it does not answer."""
    u = urllib.parse.urlsplit(url)
    try:
        conn = http.client.HTTPConnection(u.hostname, u.port, timeout=10)
        conn.request("GET", "/readyz")
        body = conn.getresponse().read()
        conn.close()
        return json.loads(body)
    except (OSError, http.client.HTTPException, ValueError):
        return {}


def spread_over(n_items, n, offset=0.0):
    """`n` positions spread evenly over range(n_items) (`offset` in [0, 1): shifted by that part of a step)."""
    n = min(n, n_items)
    return sorted({min(n_items - 1, int((i + offset) * n_items / n)) for i in range(n)})


def _pings(host, port, path, ids):
    statuses = _session_requests(host, port, path, ids, "POST")
    return sum(1 for s in statuses if s == 200), statuses


def cmd_sessions(args):
    """Opens sessions up to each count and measures RSS there; then pings a sample spread over all of them.

    Against a gateway whose `max_sessions` is below the count, most sessions have rested (their actors dropped,
    a record kept): the sample is pinged newest first, so the pings of sessions that still have an actor make
    no room, and every rested session in the sample must be rebuilt from its id (`/readyz` `sessions_resumed`
    rises by exactly their number). `--replica-url`: another mcpgw with the same key ring, which has never seen
    these sessions, is pinged with another sample: each one must be rebuilt there."""
    u = urllib.parse.urlsplit(args.url)
    host, port, path = u.hostname, u.port, u.path
    counts = sorted({int(c) for c in args.counts.split(",") if c} | {int(c) for c in (args.also_at or "").split(",") if c})
    goal_counts = {int(c) for c in args.counts.split(",") if c}
    deadline = time.monotonic() + args.max_seconds if args.max_seconds else None
    records = []
    with multiprocessing.Pool(args.workers) as pool:
        # Warm-up: the gateway's buffers, thread caches and maps see traffic first; these are deleted.
        warm, _, _, _ = _open_many(pool, host, port, path, args.warmup, args.workers)
        _session_requests(host, port, path, warm, "DELETE")
        time.sleep(args.settle)
        base_rss = rss_kib(args.pid)
        base_smaps = smaps_rollup(args.pid)
        # Every session held, with when it was last used (the gateway rests the least recently used first).
        held, used = [], array.array("d")
        total_errors = 0
        for target in counts:
            if len(held) >= target:
                continue
            ids, stamps, errors, elapsed = _open_many(pool, host, port, path, target - len(held), args.workers,
                                                      deadline)
            held.extend(ids)
            used.extend(stamps)
            total_errors += errors
            time.sleep(args.settle)
            rss = rss_kib(args.pid)
            smaps = smaps_rollup(args.pid)
            before = readyz(args.admin_url)
            # The sample, by last use; pinged newest first.
            order = sorted(range(len(held)), key=used.__getitem__)
            picks = spread_over(len(order), args.sample)
            actors = before.get("sessions", len(held))
            boundary = len(held) - actors  # ranks below it have rested (ranks above: an actor)
            expected = (sum(1 for r in picks if r < boundary - args.tie),
                        sum(1 for r in picks if r < boundary + args.tie))
            sample = [held[order[r]] for r in reversed(picks)]
            alive, _ = _pings(host, port, path, sample)
            now = time.monotonic()
            for r in picks:
                used[order[r]] = now
            after = readyz(args.admin_url)
            resumed = after.get("sessions_resumed", 0) - before.get("sessions_resumed", 0)
            rec = {
                "case": "d", "label": f"{target}", "sessions_target": target, "goal": target in goal_counts,
                "max_sessions": args.max_sessions, "sessions_held": len(held), "errors": total_errors,
                "complete": len(held) >= target,
                "deadline_hit": deadline is not None and time.monotonic() > deadline,
                "rss_before_kib": base_rss, "rss_after_kib": rss,
                "per_session_bytes": (rss - base_rss) * 1024 / max(1, len(held)),
                "smaps_before": base_smaps, "smaps_after": smaps,
                "open_seconds": elapsed, "open_rate": len(ids) / elapsed if elapsed else None,
                "alive_sample": f"{alive}/{len(sample)}", "alive": alive, "sample": len(sample),
                "readyz_before_pings": {k: v for k, v in before.items() if k.startswith("session")},
                "readyz_after_pings": {k: v for k, v in after.items() if k.startswith("session")},
                "resumed": resumed, "resumed_expected": list(expected),
                "resumed_ok": expected[0] <= resumed <= expected[1],
            }
            print(f"  {len(held)} idle sessions held (errors {total_errors}; opened at "
                  f"{rec['open_rate']:.0f}/s by this driver): RSS {base_rss} KiB -> {rss} KiB, "
                  f"{rec['per_session_bytes']:.0f} bytes per session; gateway: {actors} actors, "
                  f"{before.get('session_records', '?')} records, {before.get('sessions_rested', '?')} rested so far; "
                  f"ping on a sample spread over all of them: {alive}/{len(sample)} alive, {resumed} rebuilt from "
                  f"their ids (expected {expected[0]}..{expected[1]})", flush=True)
            if args.replica_url and target == counts[-1]:
                # Another replica with the same key ring, which has never seen these sessions.
                ru = urllib.parse.urlsplit(args.replica_url)
                pinged = set(picks)
                other = [held[order[r]] for r in spread_over(len(order), args.sample, 0.5) if r not in pinged]
                r0 = readyz(args.replica_admin_url)
                r_alive, _ = _pings(ru.hostname, ru.port, ru.path, other)
                r1 = readyz(args.replica_admin_url)
                r_resumed = r1.get("sessions_resumed", 0) - r0.get("sessions_resumed", 0)
                rec["replica"] = {"sample": len(other), "alive": r_alive, "resumed": r_resumed,
                                  "ok": r_alive == len(other) == r_resumed}
                print(f"  another replica (same key ring, never saw them): {r_alive}/{len(other)} of another "
                      f"sample alive, {r_resumed} rebuilt from their ids", flush=True)
            records.append(rec)
    with open(args.out, "a") as f:
        for rec in records:
            f.write(json.dumps(rec) + "\n")
    ok = all(r["complete"] and r["alive"] == r["sample"] and r["resumed_ok"] and r.get("replica", {}).get("ok", True)
             for r in records)
    return 0 if ok else 1


# --- a backend that never answers -----------------------------------------------------------------

class SilentHandler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    mode = "never"
    announce_every = 5.0
    hang = threading.Event()  # never set: waiting on it is sleeping until the process ends

    def log_message(self, *a):
        pass

    def do_GET(self):
        if self.mode == "never":
            self.hang.wait()
            return
        self.send_response(405)
        self.send_header("Content-Length", "0")
        self.end_headers()

    def do_DELETE(self):
        self.do_GET()

    def do_POST(self):
        length = int(self.headers.get("Content-Length") or 0)
        body = self.rfile.read(length) if length else b""
        if self.mode == "never":
            self.hang.wait()
            return
        try:
            req = json.loads(body)
        except ValueError:
            req = {}
        method, rid = req.get("method"), req.get("id")
        if method == "server/discover":
            self.reply(rid, {
                "resultType": "complete", "supportedVersions": ["2026-07-28"],
                "capabilities": {"tools": {"listChanged": True}},
                "serverInfo": {"name": "list-hangs", "version": "1"}})
        elif method == "subscriptions/listen":
            self.listen(rid, (req.get("params") or {}).get("notifications") or {})
        elif rid is None:
            self.send_response(202)
            self.send_header("Content-Length", "0")
            self.end_headers()
        else:
            self.hang.wait()  # tools/list and everything else: never answered

    def reply(self, rid, result):
        data = json.dumps({"jsonrpc": "2.0", "id": rid, "result": result}).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def listen(self, rid, wanted):
        meta = {"io.modelcontextprotocol/subscriptionId": rid}
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Cache-Control", "no-cache")
        self.send_header("Connection", "close")
        self.end_headers()
        self.close_connection = True
        honored = {"toolsListChanged": True} if wanted.get("toolsListChanged") else {}

        def event(obj):
            self.wfile.write(b"data: " + json.dumps(obj).encode() + b"\n\n")
            self.wfile.flush()

        try:
            event({"jsonrpc": "2.0", "method": "notifications/subscriptions/acknowledged",
                   "params": {"notifications": honored, "_meta": meta}})
            while True:
                time.sleep(self.announce_every)
                if honored:
                    event({"jsonrpc": "2.0", "method": "notifications/tools/list_changed",
                           "params": {"_meta": meta}})
                    print(f"announce {time.time():.6f}", file=sys.stderr, flush=True)
                else:
                    self.wfile.write(b":\n\n")
                    self.wfile.flush()
        except OSError:
            pass


def cmd_silent(args):
    SilentHandler.mode = args.mode
    SilentHandler.announce_every = args.announce_every
    server = ThreadingHTTPServer(("127.0.0.1", 0), SilentHandler)
    server.daemon_threads = True
    host, port = server.server_address
    print(f"silent listening on http://{host}:{port}/mcp ({args.mode})", file=sys.stderr, flush=True)
    # Bounded: the process ends on its own after --max-seconds even if nobody stops it.
    threading.Timer(args.max_seconds, lambda: os._exit(0)).start()
    server.serve_forever()
    return 0


def cmd_refreshes(args):
    """How long after each list-change announcement the gateway logged `catalog refreshed`."""
    from datetime import datetime
    announces = []
    with open(args.announce_log) as f:
        for line in f:
            if line.startswith("announce "):
                announces.append(float(line.split()[1]))
    refreshed = []
    with open(args.gateway_log) as f:
        for line in f:
            if "catalog refreshed" in line:
                stamp = line.split()[0]
                try:
                    refreshed.append(datetime.fromisoformat(stamp.replace("Z", "+00:00")).timestamp())
                except ValueError:
                    pass
    delays = []
    for t in refreshed:
        before = [a for a in announces if a <= t]
        if before and t - before[-1] < args.announce_every * 3:
            delays.append((t - before[-1]) * 1000)
    rec = {"case": "f-refresh", "label": "list-hangs", "announce_every": args.announce_every,
           "announces": len(announces), "refreshes": len(refreshed), "delays_ms": delays}
    if delays:
        rec["refresh_summary"] = (f"{len(delays)} rebuilds, {statistics.median(delays):.0f} ms median and "
                                  f"{max(delays):.0f} ms at most from the announcement to the new catalog "
                                  f"(250 ms of it the gateway's debounce)")
    else:
        rec["refresh_summary"] = f"no rebuild was logged ({len(announces)} announcements)"
    print(f"    {rec['refresh_summary']}")
    with open(args.out, "a") as f:
        f.write(json.dumps(rec) + "\n")
    return 0


# --- the report --------------------------------------------------------------------------------------

def load_results(path):
    out = []
    with open(path) as f:
        for line in f:
            line = line.strip()
            if line:
                out.append(json.loads(line))
    return out


def median(xs):
    xs = [x for x in xs if x is not None]
    return statistics.median(xs) if xs else None


def spread(xs):
    xs = [x for x in xs if x is not None]
    if not xs:
        return ""
    if len(xs) == 1:
        return ""
    return f" (runs: {', '.join(fmt(x, 2) for x in xs)})"


def fmt(x, digits=2):
    if x is None:
        return "n/a"
    if isinstance(x, float) and math.isnan(x):
        return "n/a"
    if abs(x) >= 1000:
        return f"{x:,.0f}"
    return f"{x:.{digits}f}"


class Report:
    def __init__(self, results, meta, quick):
        self.r = results
        self.meta = meta
        self.quick = quick
        self.lines = []
        self.goals = []  # (id, what, goal, measured, met)

    def runs(self, case, label):
        return sorted((x for x in self.r if x.get("case") == case and x.get("label") == label
                       and x.get("load")), key=lambda x: x.get("rep") or 0)

    def pairs(self, case, a, b):
        """(a-run, b-run) by repetition: each pair measured back to back."""
        ra = {x.get("rep"): x for x in self.runs(case, a)}
        rb = {x.get("rep"): x for x in self.runs(case, b)}
        return [(ra[k], rb[k]) for k in sorted(ra) if k in rb]

    def out(self, s=""):
        self.lines.append(s)

    def goal(self, gid, what, goal, measured, met):
        self.goals.append((gid, what, goal, measured, met))
        return "met" if met else "**MISSED**"

    @staticmethod
    def thr(run):
        return run["load"]["throughput_rps"]

    @staticmethod
    def lat(run, p):
        return run["load"]["latency_ms"][p]

    @staticmethod
    def errors(run):
        return run["load"]["errors"]

    def cpu_table(self, runs_by_label, names):
        names = list(names) + ["other"]
        self.out("| run | throughput /s | " + " | ".join(f"{n} (cores)" for n in names) + " | total |")
        self.out("| --- | ---: | " + " | ".join("---:" for _ in names) + " | ---: |")
        for label, runs in runs_by_label:
            if not runs:
                continue
            cores = {n: median([x["cores"].get(n) for x in runs]) for n in names}
            total = sum(v for v in cores.values() if v is not None)
            self.out(f"| {label} | {fmt(median([self.thr(x) for x in runs]), 0)} | "
                     + " | ".join(fmt(cores[n]) for n in names) + f" | {fmt(total)} |")
        self.out()

    def per_request_cpu(self, runs, names):
        """CPU microseconds per request of each process (median over runs)."""
        out = {}
        for n in names:
            vals = []
            for x in runs:
                reqs = x["load"]["requests"]
                if reqs and x["cpu_s"].get(n) is not None:
                    vals.append(x["cpu_s"][n] / reqs * 1e6)
            out[n] = median(vals)
        return out

    def cost_ratio(self, pairs, names_base, names_subject):
        out = []
        for b, s_ in pairs:
            cb = sum(b["cpu_s"].get(n, 0) for n in names_base) / max(1, b["load"]["requests"])
            cs = sum(s_["cpu_s"].get(n, 0) for n in names_subject) / max(1, s_["load"]["requests"])
            out.append(cb / cs if cs else None)
        return out

    def thread_split(self, runs, name, what="the gateway"):
        """One sentence: CPU per request of each thread of `name`, and its context switches per request."""
        acc, sw = {}, []
        for x in runs:
            reqs = x["load"]["requests"]
            if not reqs:
                continue
            for comm, secs in (x.get("threads_cpu_s") or {}).get(name, {}).items():
                acc.setdefault(comm, []).append(secs / reqs * 1e6)
            c = (x.get("ctxt_switches") or {}).get(name)
            if c is not None:
                sw.append(c / reqs)
        parts = [f"{fmt(median(v), 1)} µs on {THREADS.get(c, c)}" for c, v in
                 sorted(acc.items(), key=lambda kv: -(median(kv[1]) or 0)) if (median(v) or 0) >= 0.5]
        if not parts:
            return
        self.out(f"Inside {what}, per request: {'; '.join(parts)}; {fmt(median(sw), 2)} context switches "
                 f"per request (all its threads).")
        self.out()

    def comparison(self, case, base, subject, base_name, subject_name):
        """Table of throughput and latency, subject vs baseline, per pair; returns medians."""
        pairs = self.pairs(case, base, subject)
        if not pairs:
            self.out(f"_no runs of {case} ({base} vs {subject}): see the log_")
            self.out()
            return None
        self.out(f"| run | {base_name} /s | {subject_name} /s | ratio | {base_name} p50 / p99 ms | "
                 f"{subject_name} p50 / p99 ms | added p50 / p99 ms | errors |")
        self.out("| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: |")
        ratios, add50, add99 = [], [], []
        for i, (b, s) in enumerate(pairs, 1):
            ratio = self.thr(s) / self.thr(b) if self.thr(b) else None
            a50 = self.lat(s, "p50") - self.lat(b, "p50")
            a99 = self.lat(s, "p99") - self.lat(b, "p99")
            ratios.append(ratio)
            add50.append(a50)
            add99.append(a99)
            self.out(f"| {i} | {fmt(self.thr(b), 0)} | {fmt(self.thr(s), 0)} | {fmt(ratio)} | "
                     f"{fmt(self.lat(b, 'p50'), 3)} / {fmt(self.lat(b, 'p99'), 3)} | "
                     f"{fmt(self.lat(s, 'p50'), 3)} / {fmt(self.lat(s, 'p99'), 3)} | "
                     f"{fmt(a50, 3)} / {fmt(a99, 3)} | {self.errors(b)} / {self.errors(s)} |")
        self.out()
        return {"ratio": median(ratios), "ratios": ratios, "add50": median(add50),
                "add99": median(add99), "pairs": pairs,
                "errors": sum(self.errors(b) + self.errors(s) for b, s in pairs)}

    def profile_kinds(self, name):
        """{kind: percent} from the `by kind:` block of a profile written by perf_report."""
        path = os.path.join(self.meta["dir"], name)
        out, on = {}, False
        try:
            with open(path) as f:
                for line in f:
                    if line.startswith("by kind:"):
                        on = True
                        continue
                    if on:
                        if not line.strip():
                            break
                        pct, kind = line.strip().split("%", 1)
                        out[kind.strip()] = float(pct)
        except (OSError, ValueError):
            pass
        return out

    def profile(self, name):
        path = os.path.join(self.meta["dir"], name)
        if os.path.exists(path):
            with open(path) as f:
                text = f.read().strip()
            if text:
                self.out("<details><summary>perf profile of the gateway (self time)</summary>")
                self.out()
                self.out("```")
                self.out(text)
                self.out("```")
                self.out("</details>")
                self.out()

    def build(self):
        m = self.meta
        self.out(f"# mcpgw benchmarks — {m['date']}")
        self.out()
        self.out(f"`bench/run.sh{' --quick' if self.quick else ''}` on {m['machine']}. "
                 f"mcpgw {m['version']} ({m['commit']}). Every figure is measured beside its "
                 f"baseline in the same run (alternating, {m['reps']} repetition(s) of {m['duration']} s each "
                 f"unless stated) and given as a ratio; the machine is shared, so the individual runs are shown "
                 f"to give the noise. Load generator: `mcpgw load` (closed loop unless stated). CPU: utime+stime "
                 f"from /proc over each run, in cores (1.00 = one core busy for the whole run; `other` = everything "
                 f"else the machine ran meanwhile, from /proc/stat: other work on this shared machine). mcpgw runs "
                 f"with its defaults (2 workers here) except `max_in_flight = 4096` on its HTTP mock backend "
                 f"(the per-backend bulkhead, 64 by default, would answer open-loop bursts \"overloaded\"); "
                 f"in (a) and (b)'s HTTP-mock figure its two built-in middlewares are on (`access_log`, one line "
                 f"per request into its log file, and `allow_methods`).")
        self.out()
        self.out("SUMMARY_PLACEHOLDER")
        self.section_a()
        self.section_b()
        self.section_c()
        self.section_d()
        self.section_e()
        self.section_f()
        self.section_g()
        import idle_conns  # figure (h), in its own file (which imports this one)
        idle_conns.section(self.r, self.out, self.goal)
        import growth  # figure (k), likewise
        growth.section(self.r, self.out, self.goal)
        import floor  # figure (n), likewise (with `--only n`; no section when the run has no (n) runs)
        floor.section(self.r, self.out, self.goal)
        summary = ["## Summary", "", "| | What | Goal | Measured | |", "| --- | --- | --- | --- | --- |"]
        for gid, what, goal, measured, met in self.goals:
            summary.append(f"| {gid} | {what} | {goal} | {measured} | {'met' if met else '**missed**'} |")
        summary.append("")
        i = self.lines.index("SUMMARY_PLACEHOLDER")
        self.lines[i:i + 1] = summary
        return "\n".join(self.lines) + "\n"

    def cpu_per_request_line(self, pairs, base_label, subject_label, names_base, names_subject):
        d = self.per_request_cpu([p[0] for p in pairs], names_base)
        g = self.per_request_cpu([p[1] for p in pairs], names_subject)
        fmt_side = lambda v, ns: " + ".join(f"{fmt(v[n], 1)} µs {n}" for n in ns if v.get(n)) + \
            f" = {fmt(sum(v[n] or 0 for n in ns), 1)} µs"
        self.out(f"CPU per request: {base_label} {fmt_side(d, names_base)}; {subject_label} "
                 f"{fmt_side(g, names_subject)}.")
        self.out()
        return d, g

    def section_a(self):
        self.out("## (a) tools/call through mcpgw vs directly to the same HTTP mock backend")
        self.out()
        self.out(f"(a1) `mcpgw mock-backend --listen … --latency-ms 1`, {m_get(self.meta, 'a1_sessions', 64)} "
                 "sessions, era modern, closed loop; mcpgw in front of the same mock process (one HTTP backend).")
        self.out()
        names = ["generator", "gateway", "mock"]
        c = self.comparison("a1", "direct", "gateway", "direct", "mcpgw")
        if c:
            self.out(f"Throughput ratio **{fmt(c['ratio'])}**{spread(c['ratios'])} — "
                     + self.goal("a1", "tools/call via mcpgw / direct; mock 1 ms, 64 sessions",
                                 "ratio ≥ 0.9", fmt(c["ratio"]), c["ratio"] is not None and c["ratio"] >= 0.9)
                     + f"; added p50 **{fmt(c['add50'], 3)} ms** — "
                     + self.goal("a1", "added p50 (same run)", "≤ 0.2 ms", f"{fmt(c['add50'], 3)} ms",
                                 c["add50"] is not None and c["add50"] <= 0.2)
                     + f"; added p99 {fmt(c['add99'], 3)} ms.")
            self.out()
            self.cpu_table([("direct", [p[0] for p in c["pairs"]]), ("through mcpgw", [p[1] for p in c["pairs"]])],
                           names)
            self.cpu_per_request_line(c["pairs"], "direct", "through mcpgw", ["generator", "mock"], names)
            direct_p50 = median([self.lat(p[0], "p50") for p in c["pairs"]])
            direct_cores = median([x["cores"].get("generator", 0) + x["cores"].get("mock", 0)
                                   for x in (p[0] for p in c["pairs"])])
            gw_cores = median([x["cores"].get("generator", 0) + x["cores"].get("gateway", 0) + x["cores"].get("mock", 0)
                               for x in (p[1] for p in c["pairs"])])
            predicted = median([self.lat(b, "mean") / self.lat(s_, "mean") for b, s_ in c["pairs"]])
            self.out(f"Why: the direct run is latency-bound, not CPU-bound (generator + mock use "
                     f"{fmt(direct_cores)} of 2 cores): the mock's 1 ms sleep ends on tokio's 1 ms timer tick, so a "
                     f"call takes {fmt(direct_p50, 2)} ms (p50). With 64 sessions in a closed loop, throughput is 64 / "
                     f"latency, so the throughput ratio is the ratio of mean latencies ({fmt(predicted)} predicted "
                     f"from them): every 0.1 ms mcpgw adds costs ~{fmt(100 * 0.1 / max(0.1, direct_p50), 1)}% of "
                     f"throughput. mcpgw adds ~0.2 ms below saturation (the open-loop run next) but more here, "
                     f"where its CPU per call (above) brings the machine to {fmt(gw_cores)} cores busy and calls "
                     f"queue for the CPU between its threads.")
            self.out()
        co = self.comparison("a1", "direct-open", "gateway-open", "direct", "mcpgw")
        if co:
            rate = m_get(self.meta, "a1_rate", None)
            self.out(f"The same mock and sessions in open loop at {rate}/s (below saturation: the latency mcpgw "
                     f"adds when it is not competing for CPU): added p50 **{fmt(co['add50'], 3)} ms**, added p99 "
                     f"{fmt(co['add99'], 3)} ms" + (f"{spread([self.lat(p[1], 'p50') - self.lat(p[0], 'p50') for p in co['pairs']])}" if len(co['pairs']) > 1 else "") + ".")
            self.out()
        self.out(f"(a2) zero latency: generator, mcpgw and mock share the machine, {m_get(self.meta, 'a2_sessions', 64)} "
                 "sessions, era modern, closed loop.")
        self.out()
        c = self.comparison("a2", "direct", "gateway", "direct", "mcpgw")
        if c:
            self.out(f"Throughput ratio **{fmt(c['ratio'])}**{spread(c['ratios'])} — "
                     + self.goal("a2", "tools/call via mcpgw / direct; zero latency, CPU-bound", "ratio ≥ 0.5",
                                 fmt(c["ratio"]), c["ratio"] is not None and c["ratio"] >= 0.5)
                     + f"; added p50 {fmt(c['add50'], 3)} ms, p99 {fmt(c['add99'], 3)} ms.")
            self.out()
            self.out("How the CPU splits between the three processes (median over the runs):")
            self.out()
            self.cpu_table([("direct", [p[0] for p in c["pairs"]]), ("through mcpgw", [p[1] for p in c["pairs"]])],
                           names)
            d, g = self.cpu_per_request_line(c["pairs"], "direct", "through mcpgw", ["generator", "mock"], names)
            cost = self.cost_ratio(c["pairs"], ["generator", "mock"], names)
            self.out(f"CPU-cost ratio (CPU per call of all three processes, direct / through mcpgw, per pair): "
                     f"**{fmt(median(cost))}**{spread(cost)} — the throughput ratio a CPU-bound run converges to "
                     f"when nothing else uses the machine; less sensitive to the other work on it (`other`).")
            self.out()
            self.thread_split([p[1] for p in c["pairs"]], "gateway")
            if c["ratio"] is not None and c["ratio"] < 0.5 and g.get("gateway") and d.get("mock"):
                kinds = self.profile_kinds("profile-a2-gateway.txt")
                k = lambda *names: fmt(sum(v for n, v in kinds.items() if any(n.startswith(x) for x in names)), 0)
                par = d["mock"] * 2 if d.get("mock") else None
                ceiling = ((d["generator"] + d["mock"]) / (d["generator"] + d["mock"] + par)
                           if par and d.get("generator") else None)
                text = (f"Where the time goes: mcpgw spends {fmt(g['gateway'], 1)} µs of CPU per forwarded call, "
                        f"{fmt(g['gateway'] / d['mock'], 1)}× what the mock spends answering it "
                        f"({fmt(d['mock'], 1)} µs), for two HTTP exchanges (its server side and its client side, "
                        f"the mock's one exchange costing it {fmt(d['mock'], 1)} µs on the same HTTP stack). A call "
                        f"stays on the worker thread that received it (the thread split and context switches "
                        f"above). Even a gateway whose own work cost nothing, paying only for its two exchanges "
                        f"at the mock's price, would reach {fmt(ceiling)} here: on two cores shared by three "
                        f"processes the goal of 0.5 asks for about that.")
                if kinds:
                    text += (f" In the profile: {k('kernel: TCP')}% kernel TCP over loopback, "
                             f"{k('kernel: scheduling', 'kernel: spinlocks')}% scheduling and wake-ups, "
                             f"{k('libc: malloc')}% malloc/free, {k('mcpgw: HTTP client')}% the HTTP client "
                             f"(reqwest/hyper), {k('mcpgw: tokio')}% tokio, {k('mcpgw: serde_json')}% serde_json, "
                             f"{k('mcpgw: protocol')}% protocol validation and shaping, "
                             f"{k('mcpgw: gateway', 'mcpgw: handlers')}% the gateway's and handlers' own code.")
                self.out(text)
                self.out()
            self.profile("profile-a2-gateway.txt")

    def section_b(self):
        self.out("## (b) the 2026-07-28 stateless path through mcpgw vs a minimal actix-web JSON echo")
        self.out()
        self.out("Ceiling: `bench/echo` (actix-web 4, one worker per core like mcpgw, parses the JSON-RPC body "
                 "with serde_json and echoes the arguments back as a result), loaded exactly like mcpgw: "
                 f"{m_get(self.meta, 'b_sessions', 64)} sessions, era modern, closed loop, tools/call. "
                 "The headline is mcpgw with the mock backend built in (`builtin = [\"mock-backend\"]`, an "
                 "in-process backend: validation, routing, `_meta` stamping, the backend's dispatch, shaping, "
                 "in one process and one HTTP exchange). Also shown: mcpgw forwarding to the zero-latency HTTP "
                 "mock (a second HTTP exchange and a second server on the same cores), and `tools/list` "
                 "answered by mcpgw from its catalog: the front door alone.")
        self.out()
        c = self.comparison("b", "echo", "gateway-builtin", "echo", "mcpgw tools/call (builtin backend)")
        if c:
            self.out(f"Throughput ratio **{fmt(c['ratio'])}**{spread(c['ratios'])} — "
                     + self.goal("b", "2026-07-28 tools/call via mcpgw (in-process backend) / actix-web echo",
                                 "ratio ≥ 0.5", fmt(c["ratio"]), c["ratio"] is not None and c["ratio"] >= 0.5)
                     + ".")
            self.out()
        c1 = self.comparison("b", "echo", "gateway", "echo", "mcpgw tools/call (HTTP mock)")
        if c1:
            cost = self.cost_ratio(c1["pairs"], ["generator", "target"], ["generator", "target", "mock"])
            self.out(f"Forwarding to the HTTP mock instead (two HTTP exchanges, two servers): ratio "
                     f"**{fmt(c1['ratio'])}**{spread(c1['ratios'])}; CPU-cost ratio (CPU per call of generator + "
                     f"servers, echo / mcpgw + mock): {fmt(median(cost))}{spread(cost)}.")
            self.out()
        c2 = self.comparison("b", "echo", "gateway-list", "echo", "mcpgw tools/list")
        if c2:
            self.out(f"mcpgw's front door alone (tools/list from the catalog) vs the echo: ratio "
                     f"**{fmt(c2['ratio'])}**{spread(c2['ratios'])}.")
            self.out()
        names = ["generator", "target", "mock"]
        rows = [("echo", self.runs("b", "echo")),
                ("mcpgw tools/call, builtin backend", self.runs("b", "gateway-builtin")),
                ("mcpgw tools/call, HTTP mock", self.runs("b", "gateway")),
                ("mcpgw tools/list", self.runs("b", "gateway-list"))]
        self.out("CPU split (target = the echo or mcpgw):")
        self.out()
        self.cpu_table(rows, names)
        e = self.per_request_cpu(self.runs("b", "echo"), names)
        gb = self.per_request_cpu(self.runs("b", "gateway-builtin"), names)
        g = self.per_request_cpu(self.runs("b", "gateway"), names)
        gl = self.per_request_cpu(self.runs("b", "gateway-list"), names)
        self.out(f"CPU per request of the server: echo {fmt(e['target'], 1)} µs; mcpgw tools/call to the builtin "
                 f"backend {fmt(gb['target'], 1)} µs; to the HTTP mock {fmt(g['target'], 1)} µs (+ "
                 f"{fmt(g['mock'], 1)} µs in the mock); mcpgw tools/list {fmt(gl['target'], 1)} µs. Generator: "
                 f"{fmt(e['generator'], 1)} / {fmt(gb['generator'], 1)} / {fmt(g['generator'], 1)} / "
                 f"{fmt(gl['generator'], 1)} µs.")
        self.out()
        self.thread_split(self.runs("b", "gateway-list"), "target", "mcpgw answering tools/list")

    def section_c(self):
        self.out("## (c) mcpgw vs mcp-proxy@6.7.19 in front of the same stdio backend")
        self.out()
        if not self.runs("c", "mcp-proxy-modern") and not self.runs("c", "mcp-proxy-legacy"):
            self.out("_not measured in this run (Node 22 or mcp-proxy unavailable: see the log)_")
            self.out()
            return
        self.out(f"Each fronts its own `mcpgw mock-backend --stdio` child process (mcp-proxy: "
                 f"`mcp-proxy --host 127.0.0.1 --port P -- mcpgw mock-backend --stdio`, its defaults otherwise, "
                 f"on Node {m_get(self.meta, 'node', '22')}; mcpgw: one stdio backend, prefix \"\"). "
                 f"{m_get(self.meta, 'c_sessions', 16)} sessions, closed loop, tools/call `echo`, both eras.")
        self.out()
        for era in ("modern", "legacy"):
            label_p, label_g = f"mcp-proxy-{era}", f"gateway-{era}"
            if not self.runs("c", label_p):
                continue
            self.out(f"Era {era}:")
            self.out()
            c = self.comparison("c", label_p, label_g, "mcp-proxy", "mcpgw")
            if c:
                self.out(f"mcpgw / mcp-proxy throughput: **{fmt(c['ratio'])}×**{spread(c['ratios'])} — "
                         + self.goal("c", f"mcpgw / mcp-proxy, stdio backend, era {era}", "≥ 5×",
                                     f"{fmt(c['ratio'])}×", c["ratio"] is not None and c["ratio"] >= 5) + ".")
                self.out()
                names = ["generator", "proxy", "backend"]
                self.cpu_table([("mcp-proxy", [p[0] for p in c["pairs"]]), ("mcpgw", [p[1] for p in c["pairs"]])],
                               names)
                pp = self.per_request_cpu([p[0] for p in c["pairs"]], ["proxy"])
                gp = self.per_request_cpu([p[1] for p in c["pairs"]], ["proxy"])
                rss = [(p[0]["rss_kib"].get("proxy"), p[1]["rss_kib"].get("proxy")) for p in c["pairs"]]
                extra = ""
                if rss and rss[-1][0] and rss[-1][1]:
                    extra = (f" Resident memory after the runs: mcp-proxy {fmt(rss[-1][0] / 1024, 1)} MiB, "
                             f"mcpgw {fmt(rss[-1][1] / 1024, 1)} MiB.")
                node_cores = median([p[0]["cores"].get("proxy") for p in c["pairs"]])
                self.out(f"CPU per request of the proxy process (\"proxy\" = the mcp-proxy or mcpgw process, "
                         f"\"backend\" = its stdio child): mcp-proxy {fmt(pp['proxy'], 1)} µs, mcpgw "
                         f"{fmt(gp['proxy'], 1)} µs ({fmt(pp['proxy'] / gp['proxy'] if pp['proxy'] and gp['proxy'] else None, 1)}× "
                         f"less). mcp-proxy's process runs at {fmt(node_cores)} cores: its JavaScript runs on one "
                         f"event loop, which is saturated (more sessions raise its throughput little), while mcpgw "
                         f"shares the two cores with the generator and its backend.{extra}")
                self.out()
                self.thread_split([p[1] for p in c["pairs"]], "proxy", "mcpgw")

    def section_d(self):
        self.out("## (d) idle legacy sessions: resident memory per session")
        self.out()
        recs = sorted((x for x in self.r if x.get("case") == "d"),
                      key=lambda x: (x.get("max_sessions") or 0, x["sessions_target"]))
        if not recs:
            self.out("_not measured: see the log_")
            self.out()
            return
        # By gateway (its max_sessions): one that was asked for more sessions than it holds actors rests most.
        resting = {x.get("max_sessions") for x in recs
                   if x.get("max_sessions") and x["sessions_target"] > x["max_sessions"]}
        held = [x for x in recs if x.get("max_sessions") not in resting]
        rest = [x for x in recs if x.get("max_sessions") in resting]
        self.out("A driver (`bench/lib/bench.py sessions`: 2 processes, each one keep-alive connection with raw "
                 "HTTP/1.1) opens legacy sessions (`initialize` + `notifications/initialized`, 2025-11-25) and "
                 "leaves them idle; RSS of the mcpgw process from /proc before (after a warm-up of 1,000 sessions "
                 "opened and deleted) and 2 s after the last one is open, with `session_idle_secs = 7200` (no "
                 "middleware, logs at warn). The baseline is the same process before the sessions. Then a sample "
                 "spread over all the sessions (by last use) is pinged, newest first.")
        if held:
            self.out()
            self.out(f"Every session with its actor: `max_sessions = {held[0].get('max_sessions') or 150000}`.")
        if rest:
            m = rest[0].get("max_sessions")
            most = max(x["sessions_target"] for x in rest)
            self.out()
            self.out(f"Most sessions resting: another mcpgw with `max_sessions = {m}` (it bounds actors: with 16 "
                     f"records per actor slot, {16 * m:,} sessions are remembered"
                     + (f", more than the {most:,} opened, so none is forgotten early and every one is still "
                        "checked for idle expiry and DELETE" if 16 * m > most else "")
                     + "), started with a key ring (`MCPGW_SESSION_KEYS`, from `mcpgw cluster new-key`). "
                     "When its store is full it rests its idlest actors as records and rebuilds one from its "
                     "id on its next request: every resting session in the sample must answer its ping and "
                     "`/readyz` `sessions_resumed` must rise by their number (the sample is pinged newest "
                     "first, so the pings of sessions that still have an actor rest none of the others). A "
                     "second mcpgw with the same key ring, which never saw these sessions, is pinged with "
                     "another sample: each one must be rebuilt there from its id.")
        self.out()
        self.out("| sessions held | `max_sessions` | actors + records | errors | RSS before → after | per session | "
                 "of which anonymous (heap) | sample alive | rebuilt from their ids (expected) |")
        self.out("| ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |")
        for x in held + rest:
            anon = None
            if x["smaps_after"].get("Anonymous") and x["smaps_before"].get("Anonymous"):
                anon = (x["smaps_after"]["Anonymous"] - x["smaps_before"]["Anonymous"]) * 1024 / max(1, x["sessions_held"])
            rz = x.get("readyz_before_pings") or {}
            split = (f"{rz['sessions']:,} + {rz.get('session_records', 0):,}" if "sessions" in rz else "n/a")
            exp = x.get("resumed_expected")
            rebuilt = (f"{x['resumed']:,} ({exp[0]:,}" + (f"–{exp[1]:,}" if exp[1] != exp[0] else "") + ")"
                       if exp else "n/a")
            short = ("" if x.get("complete", True) else
                     f" of {x['sessions_target']:,} (" + ("stopped at its deadline" if x.get("deadline_hit") else
                                                         f"{x['errors']} refused") + ")")
            self.out(f"| {x['sessions_held']:,}{short} | "
                     f"{x.get('max_sessions') or 'n/a'} | {split} | {x['errors']} | "
                     f"{fmt(x['rss_before_kib'] / 1024, 1)} → {fmt(x['rss_after_kib'] / 1024, 1)} MiB | "
                     f"**{fmt(x['per_session_bytes'] / 1024, 2)} KiB** ({x['per_session_bytes']:.0f} B) | "
                     f"{fmt(anon / 1024 if anon is not None else None, 2)} KiB | {x['alive_sample']} | {rebuilt} |")
        self.out()
        for x in rest:
            r = x.get("replica")
            if r:
                self.out(f"Second replica, after the {x['sessions_held']:,} point: {r['alive']:,}/{r['sample']:,} "
                         f"of another sample answered, {r['resumed']:,} rebuilt from their ids "
                         f"({'as expected' if r['ok'] else '**not all**'}).")
                self.out()
        full = [x for x in rest if not x.get("goal", True)]
        for big in (x for x in rest if x.get("goal", True)):
            if not full:
                break
            f = full[0]
            actors = f["readyz_before_pings"].get("sessions") or f["sessions_held"]
            per_actor = (f["rss_after_kib"] - f["rss_before_kib"]) * 1024 / max(1, f["sessions_held"])
            rz = big.get("readyz_before_pings") or {}
            records = rz.get("session_records", 0)
            extra = (big["rss_after_kib"] - f["rss_after_kib"]) * 1024
            self.out(f"Where the {big['sessions_held']:,} point's memory goes: at {f['sessions_held']:,} sessions "
                     f"(the store just full, every session an actor) the process had grown by "
                     f"{fmt((f['rss_after_kib'] - f['rss_before_kib']) / 1024, 1)} MiB, {per_actor:.0f} B per actor; "
                     f"from there to {big['sessions_held']:,} sessions ({rz.get('sessions', 0):,} actors, "
                     f"{records:,} records) it grew by {fmt(extra / 1048576, 1)} MiB, "
                     f"{extra / max(1, big['sessions_held'] - f['sessions_held']):.0f} B per session added "
                     "(its record, and what the allocator keeps of the actors built and rested meanwhile).")
            self.out()
        for x in recs:
            # The goal of issue 14 is set at 1,000,000 sessions on a replica holding fewer actors.
            if not x.get("goal", True) or (x in rest and x["sessions_target"] < 1_000_000):
                continue
            per = x["per_session_bytes"] / 1024
            if x in rest:
                ok = (x.get("complete", True) and x["errors"] == 0 and x.get("alive") == x.get("sample")
                      and x.get("resumed_ok") and (x.get("replica") or {}).get("ok", True))
                self.goal("d", f"RSS per idle legacy session at {x['sessions_target']:,} (max_sessions "
                               f"{x.get('max_sessions')}; sample rebuilt here and on a second replica)",
                          "≤ 0.5 KiB", f"{fmt(per, 2)} KiB", per <= 0.5 and ok)
            else:
                self.goal("d", f"RSS per idle legacy session at {x['sessions_target']:,}", "≤ 4 KiB",
                          f"{fmt(per, 2)} KiB", per <= 4 and x["errors"] == 0)

    def section_e(self):
        self.out("## (e) session creation rate")
        self.out()
        self.out(f"`mcpgw load --era legacy --mix churn=1`, {m_get(self.meta, 'e_sessions', 32)} sessions, closed "
                 "loop: each operation opens a new session (`initialize` + `notifications/initialized`) that "
                 "replaces the client's previous one, which is then deleted (`DELETE`): three HTTP exchanges "
                 "per session created, and the number of live sessions stays flat. Baseline: the same against "
                 "the mock backend directly (it keeps legacy sessions too). mcpgw answers `initialize` itself "
                 "(no backend is asked).")
        self.out()
        c = self.comparison("e", "direct", "gateway", "mock", "mcpgw")
        if c:
            rate = median([self.thr(p[1]) for p in c["pairs"]])
            self.out(f"Sessions created per second through mcpgw: **{fmt(rate, 0)}/s** (ratio to the mock "
                     f"{fmt(c['ratio'])}{spread(c['ratios'])}) — "
                     + self.goal("e", "sessions created per second (initialize + initialized, and a DELETE)",
                                 "≥ 10,000/s", f"{fmt(rate, 0)}/s", rate is not None and rate >= 10000) + ".")
            self.out()
            names = ["generator", "gateway", "mock"]
            self.cpu_table([("mock directly", [p[0] for p in c["pairs"]]),
                            ("mcpgw", [p[1] for p in c["pairs"]])], names)
            g = self.per_request_cpu([p[1] for p in c["pairs"]], names)
            self.out(f"CPU per session created (three exchanges) in mcpgw: {fmt(g['gateway'], 1)} µs; in the "
                     f"generator {fmt(g['generator'], 1)} µs.")
            self.out()
        recs = [x for x in self.r if x.get("case") == "d" and x.get("open_rate")]
        if recs:
            self.out(f"(The Python driver of (d) opened sessions, without deleting them, at "
                     f"{', '.join(fmt(x['open_rate'], 0) + '/s' for x in recs)} (to "
                     f"{', '.join(format(x['sessions_target'], ',') for x in recs)}; beyond `max_sessions` each "
                     "one rests another's actor).)")
            self.out()

    def section_f(self):
        self.out("## (f) tools/list across 50 backends, one of which never answers")
        self.out()
        f = self.meta.get("f", {})
        self.out(f"50 HTTP backends: {f.get('healthy', 49)} zero-latency mock processes (each its own `--name`, "
                 "prefixes b01…b49) and one silent backend (`bench.py silent`: accepts the connection, reads the "
                 "request, never answers). Per-backend deadlines: `timeout_ms = "
                 f"{f.get('timeout_ms')}`, `list_timeout_ms = {f.get('list_timeout_ms')}`. Baseline: the same 49 "
                 "healthy backends alone, in another mcpgw. "
                 f"{m_get(self.meta, 'f_sessions', 16)} sessions, era modern, `--mix tools/list=1` (first page).")
        self.out()
        c = self.comparison("f", "healthy", "silent", "49 healthy", "49 + silent")
        deadline = f.get("timeout_ms")
        if c:
            worst99 = max(self.lat(p[1], "p99") for p in c["pairs"])
            self.out(f"tools/list p99 with the silent backend present: **{fmt(worst99, 3)} ms** (worst run) — "
                     + self.goal("f", "tools/list p99, 50 backends, one never answers",
                                 f"≤ deadline + 20 ms = {deadline + 20 if deadline else 'n/a'} ms",
                                 f"{fmt(worst99, 3)} ms",
                                 deadline is not None and worst99 <= deadline + 20 and c["errors"] == 0)
                     + f"; throughput ratio {fmt(c['ratio'])} of the all-healthy baseline. tools/list is "
                     "answered from the catalog, so the silent backend is not on its path at all.")
            self.out()
        st = [x for x in self.r if x.get("case") == "f-start"]
        if st:
            self.out("Start-up (process start → `mcpgw listening`, i.e. until the first catalog is built):")
            self.out()
            self.out("| backends | start-up s | left out of the catalog |")
            self.out("| --- | ---: | --- |")
            for x in st:
                self.out(f"| {x['label']} | {fmt(x['startup_s'], 2)} | {x.get('missing') or 'none'} |")
            self.out()
            silent = [x for x in st if "never" in x["label"]]
            if silent and silent[0]["startup_s"] > (f.get("list_timeout_ms") or 0) / 1000 + 1:
                self.out(f"A backend that never answers delays start-up by ~{fmt(silent[0]['startup_s'], 1)} s "
                         "whatever its `timeout_ms` and `list_timeout_ms`: its era probe (`server/discover`) has a "
                         "10 s deadline (the backend's connect timeout) and start-up waits up to 10 s for every "
                         "backend's first connect attempt to settle before listing (`serve::CONNECT_WAIT`); the "
                         "backend is then left out as \"not connected\". One that refuses connections or "
                         "crashes settles at once and is not waited for. A backend that connects but never "
                         "answers its list costs exactly `list_timeout_ms`.")
                self.out()
        rf = [x for x in self.r if x.get("case") == "f-refresh"]
        if rf:
            x = rf[0]
            self.out(f"Catalog refreshes past a hanging backend: a variant of the silent backend "
                     f"(`--mode list-hangs`) answers `server/discover` and `subscriptions/listen`, announces "
                     f"`notifications/tools/list_changed` every {x.get('announce_every'):g} s and never answers "
                     f"`tools/list`. Each announcement makes mcpgw rebuild its catalog from all 50 backends: "
                     f"{x.get('refresh_summary')}. tools/list meanwhile (answered from the current catalog), vs "
                     "the all-healthy gateway:")
            self.out()
            c2 = self.comparison("f", "healthy-2", "list-hangs", "49 healthy", "49 + list-hangs")
            if c2:
                worst = max(self.lat(p[1], "p99") for p in c2["pairs"])
                lt = f.get("list_timeout_ms")
                self.out(f"p99 **{fmt(worst, 3)} ms** (worst run) while the catalog is rebuilt every "
                         f"{x.get('announce_every'):g} s — "
                         + self.goal("f", "tools/list p99 during catalog refreshes past a hanging backend",
                                     f"≤ list deadline + 20 ms = {lt + 20 if lt else 'n/a'} ms", f"{fmt(worst, 3)} ms",
                                     lt is not None and worst <= lt + 20 and c2["errors"] == 0) + ".")
                self.out()

    def section_g(self):
        self.out("## (g) 1,000 legacy sessions and 1,000 modern clients at once")
        self.out()
        g = self.meta.get("g", {})
        self.out(f"`mcpgw load --era mixed --sessions 2000` (even sessions legacy, odd modern), "
                 f"{g.get('duration')} s per run, tools/call to the HTTP mock with {g.get('latency_ms', 0)} ms of "
                 "latency. Closed loop (each client sends again as soon as it is "
                 f"answered: all the machine can take) and open loop at {g.get('rate')}/s (each client about one "
                 "call per second); baseline: the same load on the mock directly.")
        self.out()
        for mode in ("closed", "open"):
            self.out(f"{mode.capitalize()} loop:")
            self.out()
            c = self.comparison("g", f"direct-{mode}", f"gateway-{mode}", "direct", "mcpgw")
            if not c:
                continue
            s = c["pairs"][0][1]
            ops = s["load"].get("operations", {})
            setup = ops.get("initialize", {}).get("requests", 0) + ops.get("server/discover", {}).get("requests", 0)
            self.out(f"mcpgw: {fmt(self.thr(s), 0)}/s, p50 **{fmt(self.lat(s, 'p50'), 3)} ms**, p99 "
                     f"**{fmt(self.lat(s, 'p99'), 3)} ms**, {s['load']['requests']:,} calls, errors "
                     f"**{self.errors(s)}** (set-up: {setup:,} sessions/discoveries; outcomes "
                     f"{json.dumps(outcome_counts(s))}) — "
                     + self.goal("g", f"2,000 clients (1,000 legacy + 1,000 modern), {mode} loop: errors",
                                 "0", str(self.errors(s)), self.errors(s) == 0 and s["load"]["requests"] > 0) + ".")
            self.out()


def outcome_counts(run):
    o = run["load"]["outcomes"]
    return {k: v for k, v in o.items() if isinstance(v, int) and v}


def m_get(meta, key, default):
    return meta.get(key, default)


def cmd_section_d(args):
    """The (d) section alone (bench/run.sh --only d), and its goals."""
    rep = Report(load_results(args.results), {}, False)
    rep.section_d()
    print("\n".join(rep.lines))
    for gid, what, goal, measured, met in rep.goals:
        print(f"({gid}) {what}: {measured} (goal {goal}): {'met' if met else 'MISSED'}")
    return 0 if all(g[4] for g in rep.goals) else 1


def cmd_report(args):
    results = load_results(args.results)
    with open(args.meta) as f:
        meta = json.load(f)
    for extra in args.extra or []:
        results.extend(load_results(extra))
    text = Report(results, meta, args.quick).build()
    with open(args.out, "w") as f:
        f.write(text)
    return 0


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = p.add_subparsers(dest="cmd", required=True)
    s = sub.add_parser("port")
    s.add_argument("pid", type=int)
    s = sub.add_parser("measure")
    s.add_argument("--out", required=True)
    s.add_argument("--case", required=True)
    s.add_argument("--label", required=True)
    s.add_argument("--rep", type=int, default=1)
    s.add_argument("--pid", action="append", default=[])
    s.add_argument("--kill-after", type=float, default=300)
    s.add_argument("--perf")
    s.add_argument("--perf-out")
    s.add_argument("--perf-delay", type=float, default=1.0)
    s.add_argument("--perf-seconds", type=float, default=3.0)
    s.add_argument("command", nargs=argparse.REMAINDER)
    s = sub.add_parser("sessions")
    s.add_argument("--url", required=True)
    s.add_argument("--pid", type=int, required=True)
    s.add_argument("--counts", required=True)
    s.add_argument("--out", required=True)
    s.add_argument("--workers", type=int, default=2)
    s.add_argument("--warmup", type=int, default=1000)
    s.add_argument("--settle", type=float, default=2.0)
    s.add_argument("--also-at", help="counts measured on the way, with no goal (e.g. max_sessions)")
    s.add_argument("--max-sessions", type=int, help="the gateway's max_sessions (recorded)")
    s.add_argument("--sample", type=int, default=100, help="sessions pinged per count, spread over all")
    s.add_argument("--tie", type=int, default=256,
                   help="sessions either side of the rested/actor boundary that may fall either way")
    s.add_argument("--replica-url", help="another mcpgw with the same key ring: a sample pinged there at the end")
    s.add_argument("--admin-url", required=True, help="the gateway's admin listener (its /readyz counts sessions)")
    s.add_argument("--replica-admin-url", help="the other replica's admin listener")
    s.add_argument("--max-seconds", type=float, help="stop opening sessions after this long")
    s = sub.add_parser("silent")
    s.add_argument("--mode", choices=["never", "list-hangs"], default="never")
    s.add_argument("--announce-every", type=float, default=5.0)
    s.add_argument("--max-seconds", type=float, default=3600)
    s = sub.add_parser("refreshes")
    s.add_argument("--announce-log", required=True)
    s.add_argument("--gateway-log", required=True)
    s.add_argument("--announce-every", type=float, default=2.0)
    s.add_argument("--out", required=True)
    s = sub.add_parser("section-d")
    s.add_argument("--results", required=True)
    s = sub.add_parser("report")
    s.add_argument("--results", required=True)
    s.add_argument("--meta", required=True)
    s.add_argument("--out", required=True)
    s.add_argument("--extra", action="append")
    s.add_argument("--quick", action="store_true")
    args = p.parse_args()
    signal.signal(signal.SIGINT, signal.SIG_DFL)
    return {"port": cmd_port, "measure": cmd_measure, "sessions": cmd_sessions, "silent": cmd_silent, "refreshes": cmd_refreshes,
            "section-d": cmd_section_d, "report": cmd_report}[args.cmd](args)


if __name__ == "__main__":
    sys.exit(main())
