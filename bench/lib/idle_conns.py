#!/usr/bin/env python3
"""Figure (h) of bench/run.sh: resident memory per idle keep-alive connection (Python standard library only).

    idle_conns.py measure --url URL --pid PID --count 5000 --out F
                        opens COUNT keep-alive connections to the gateway at URL, each sending one
                        GET /healthz and reading its answer, then leaves them idle; RSS of PID before
                        (after a warm-up of 200 connections opened and closed) and after; one JSON
                        line appended to F
    idle_conns.py section --results F
                        the Markdown section of the report from F's (h) lines
"""

import argparse
import json
import os
import resource
import socket
import sys
import time
import urllib.parse

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from bench import rss_kib, smaps_rollup  # noqa: E402


def raise_own_limit(need):
    """This driver holds `need` sockets at once: its soft open-files limit goes up to the hard one."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    want = hard if hard != resource.RLIM_INFINITY else max(soft, need + 64)
    if soft < want:
        resource.setrlimit(resource.RLIMIT_NOFILE, (want, hard))
    return resource.getrlimit(resource.RLIMIT_NOFILE)[0]


def open_files(pid):
    """Descriptors open in pid (its sockets among them)."""
    try:
        return len(os.listdir(f"/proc/{pid}/fd"))
    except OSError:
        return None


def request_bytes(host, port, path):
    return f"GET {path} HTTP/1.1\r\nHost: {host}:{port}\r\n\r\n".encode()


def read_answer(s):
    """Reads one whole answer (headers and a Content-Length body) from s: True on 200."""
    got = b""
    while b"\r\n\r\n" not in got:
        chunk = s.recv(4096)
        if not chunk:
            return False
        got += chunk
    head, _, body = got.partition(b"\r\n\r\n")
    length = 0
    for line in head.split(b"\r\n")[1:]:
        name, _, value = line.partition(b":")
        if name.strip().lower() == b"content-length":
            length = int(value.strip())
    while len(body) < length:
        chunk = s.recv(4096)
        if not chunk:
            return False
        body += chunk
    return head.startswith(b"HTTP/1.1 200")


def open_idle(host, port, path, n, batch=100):
    """n connections, each after one request; returns (sockets, errors, seconds). `batch` at a time: all
    connected, then all sent, then all answers read (fast enough that none reaches the gateway's 5 s
    keep-alive before the measurement, on a busy machine too; few enough for the listen backlog)."""
    socks, errors = [], 0
    req = request_bytes(host, port, path)
    t0 = time.monotonic()
    for start in range(0, n, batch):
        group = []
        for _ in range(min(batch, n - start)):
            try:
                group.append(socket.create_connection((host, port), timeout=10))
            except OSError:
                errors += 1
        sent = []
        for s in group:
            try:
                s.sendall(req)
                sent.append(s)
            except OSError:
                errors += 1
                s.close()
        for s in sent:
            try:
                if read_answer(s):
                    socks.append(s)
                    continue
            except OSError:
                pass
            errors += 1
            s.close()
    return socks, errors, time.monotonic() - t0


def still_open(socks):
    """How many of socks the server has not closed (a peek that would block: nothing to read, no EOF)."""
    alive = 0
    for s in socks:
        s.setblocking(False)
        try:
            if s.recv(1, socket.MSG_PEEK | socket.MSG_DONTWAIT):
                alive += 1  # data, unexpected, but open
        except BlockingIOError:
            alive += 1
        except OSError:
            pass
    return alive


def cmd_measure(args):
    u = urllib.parse.urlsplit(args.url)
    host, port = u.hostname, u.port
    limit = raise_own_limit(args.count + 64)
    # Warm-up: the gateway's allocator, pools and timer wheels see some connections first (few: the memory
    # of as many as are measured would be reused by them and hide their cost).
    warm, _, _ = open_idle(host, port, args.path, min(args.count, args.warmup))
    for s in warm:
        s.close()
    time.sleep(args.settle)
    base_rss, base_smaps, base_fds = rss_kib(args.pid), smaps_rollup(args.pid), open_files(args.pid)
    socks, errors, seconds = open_idle(host, port, args.path, args.count)
    time.sleep(args.settle)
    rss, smaps, fds = rss_kib(args.pid), smaps_rollup(args.pid), open_files(args.pid)
    alive = still_open(socks)
    held = len(socks)
    rec = {
        "case": "h", "label": args.label, "connections_target": args.count, "connections_held": held,
        "errors": errors, "alive": alive, "rss_before_kib": base_rss, "rss_after_kib": rss,
        "per_connection_bytes": (rss - base_rss) * 1024 / max(1, held),
        "smaps_before": base_smaps, "smaps_after": smaps, "fds_before": base_fds, "fds_after": fds,
        "open_seconds": seconds, "driver_open_files_limit": limit,
    }
    for s in socks:
        s.close()
    print(f"  {held} idle connections ({errors} errors, opened in {seconds:.2f} s, {alive} still open when "
          f"measured; gateway descriptors {base_fds} -> {fds}): RSS {base_rss} KiB -> {rss} KiB, "
          f"{rec['per_connection_bytes']:.0f} bytes per connection", flush=True)
    with open(args.out, "a") as f:
        f.write(json.dumps(rec) + "\n")
    return 0 if held and not errors else 1


def section(results, out, goal):
    """Writes the (h) section with `out(line)`; calls goal(id, what, goal, measured, met) per record."""
    out("## (h) idle keep-alive connections: resident memory per connection")
    out()
    recs = [x for x in results if x.get("case") == "h"]
    if not recs:
        out("_not measured: see the log_")
        out()
        return
    out("A driver (`bench/lib/idle_conns.py`: one Python process, raw sockets) opens keep-alive connections to "
        "mcpgw (built-in mock backend), 100 at a time, each sending one `GET /healthz` and reading its answer "
        "(so that actix-web has allocated the connection's buffers), and leaves them idle; RSS of the mcpgw process from /proc before (after a "
        "warm-up of 200 connections opened and closed) and 1 s after the last one is open. `still open` "
        "counts the connections the gateway had not closed when measured (its keep-alive is 5 s).")
    out()
    out("| run | connections | errors | still open | gateway descriptors | RSS before → after | per connection "
        "| of which anonymous (heap) |")
    out("| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: |")
    for x in recs:
        anon = None
        if x["smaps_after"].get("Anonymous") and x["smaps_before"].get("Anonymous"):
            anon = (x["smaps_after"]["Anonymous"] - x["smaps_before"]["Anonymous"]) / max(1, x["connections_held"])
        out(f"| {x['label']} | {x['connections_held']:,} | {x['errors']} | {x['alive']:,} | {x['fds_before']} → "
            f"{x['fds_after']} | {x['rss_before_kib'] / 1024:.1f} → {x['rss_after_kib'] / 1024:.1f} MiB | "
            f"**{x['per_connection_bytes'] / 1024:.2f} KiB** | "
            f"{'n/a' if anon is None else f'{anon:.2f} KiB'} |")
    out()
    for x in recs:
        per = x["per_connection_bytes"] / 1024
        goal("h", f"RSS per idle keep-alive connection at {x['connections_target']:,}", "≤ 8 KiB",
             f"{per:.2f} KiB", per <= 8 and x["errors"] == 0 and x["alive"] == x["connections_held"])


def cmd_section(args):
    results = []
    with open(args.results) as f:
        results = [json.loads(line) for line in f if line.strip()]
    goals = []
    section(results, lambda s="": print(s), lambda *g: goals.append(g))
    for gid, what, goal, measured, met in goals:
        print(f"({gid}) {what}: {measured} (goal {goal}): {'met' if met else 'MISSED'}")
    return 0


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = p.add_subparsers(dest="cmd", required=True)
    s = sub.add_parser("measure")
    s.add_argument("--url", required=True)
    s.add_argument("--pid", type=int, required=True)
    s.add_argument("--count", type=int, default=5000)
    s.add_argument("--out", required=True)
    s.add_argument("--label", default="mcpgw")
    s.add_argument("--path", default="/healthz")
    s.add_argument("--warmup", type=int, default=200)
    s.add_argument("--settle", type=float, default=1.0)
    s = sub.add_parser("section")
    s.add_argument("--results", required=True)
    args = p.parse_args()
    return {"measure": cmd_measure, "section": cmd_section}[args.cmd](args)


if __name__ == "__main__":
    sys.exit(main())
