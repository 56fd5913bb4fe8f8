#!/usr/bin/env python3
"""Figure (n) of bench/run.sh: the floor of a forwarded call, nginx as a plain reverse proxy (issue 34).

    floor.py section --results F [--dir WORK]    the (n) section alone, from the JSON lines of a run

The runs are case "n", labels "{era}-{subject}" (bench/lib/floor.sh). CPU per call of the proxy is the
proxy's CPU over the run (nginx: master and workers) divided by the calls answered; each figure is the median
over the repetitions, and the ratio mcpgw / nginx is taken per repetition (each pair measured back to back)
and its median reported.
"""

import argparse
import json
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from bench import fmt, load_results, median, spread  # noqa: E402

ERAS = ("modern", "legacy")
SUBJECTS = (
    ("direct", "the mock directly"),
    ("nginx-log", "nginx, access log on"),
    ("mcpgw-mw", "mcpgw, `access_log` + `allow_methods`"),
    ("nginx-off", "nginx, access log off"),
    ("forwarder", "the forwarder: actix-web + hyper, no MCP work"),
    ("mcpgw-bare", "mcpgw, no middleware"),
    ("mcpgw-h2c", "mcpgw with middlewares, HTTP/2 (h2c) to the backend"),
)
GOAL = 1.5
STRETCH = 1.25


def runs(results, label, case="n"):
    """The runs of `case` (this figure's by default; growth.py reads its own through it) labelled `label`."""
    return sorted((x for x in results if x.get("case") == case and x.get("label") == label and x.get("load")),
                  key=lambda x: x.get("rep") or 0)


def per_call(run, name, key="cpu_s"):
    """µs per call of `name`'s CPU (`key` "sys_s": its kernel part only; None in runs from before it was kept)."""
    reqs = run["load"]["requests"]
    cpu = run.get(key, {}).get(name)
    return cpu / reqs * 1e6 if reqs and cpu is not None else None


def ratios(results, subject, base, case="n"):
    """Per repetition: subject's proxy CPU per call / base's."""
    a = {x["rep"]: per_call(x, "proxy") for x in runs(results, subject, case)}
    b = {x["rep"]: per_call(x, "proxy") for x in runs(results, base, case)}
    return [a[k] / b[k] for k in sorted(a) if k in b and a[k] and b[k]]


def section(results, out, goal):
    if not any(x.get("case") == "n" for x in results):
        return
    out("## (n) the floor: tools/call through nginx as a plain reverse proxy, beside mcpgw and the mock directly")
    out()
    out("Debian's nginx (`proxy_pass` to the same zero-latency HTTP mock, upstream keep-alive, HTTP/1.1, 2 worker "
        "processes; its access log in the `combined` format to a file, unbuffered, when mcpgw's `access_log` "
        "middleware is on) is what a plain reverse proxy costs on this machine: the floor of a forwarded call. "
        "Each subject is loaded alike (`mcpgw load`, closed loop, the same sessions) in alternating rounds; "
        "CPU per call is the proxy's own (nginx: master and workers), and the mock's beside it.")
    out()
    for era in ERAS:
        out(f"### {era} ({'2026-07-28 requests' if era == 'modern' else '2025-11-25 sessions'})")
        out()
        out("| subject | throughput /s | proxy CPU µs / call | of it kernel | mock CPU µs / call | p50 / p99 ms "
            "| errors |")
        out("| --- | ---: | ---: | ---: | ---: | ---: | ---: |")
        for label, what in SUBJECTS:
            rs = runs(results, f"{era}-{label}")
            if not rs:
                continue
            thr = median([x["load"]["throughput_rps"] for x in rs])
            proxy = median([per_call(x, "proxy") for x in rs]) if label != "direct" else None
            kernel = [v for v in (per_call(x, "proxy", "sys_s") for x in rs) if v is not None]
            kernel = median(kernel) if kernel and label != "direct" else None
            mock = median([per_call(x, "mock") for x in rs])
            p50 = median([x["load"]["latency_ms"]["p50"] for x in rs])
            p99 = median([x["load"]["latency_ms"]["p99"] for x in rs])
            errs = sum(x["load"]["errors"] for x in rs)
            proxy_runs = spread([per_call(x, "proxy") for x in rs]) if label != "direct" else ""
            out(f"| {what} | {fmt(thr, 0)} | {fmt(proxy, 1)}{proxy_runs} | {fmt(kernel, 1)} | {fmt(mock, 1)} | "
                f"{fmt(p50, 3)} / {fmt(p99, 3)} | {errs} |")
        out()
        mw = ratios(results, f"{era}-mcpgw-mw", f"{era}-nginx-log")
        bare = ratios(results, f"{era}-mcpgw-bare", f"{era}-nginx-off")
        h2 = ratios(results, f"{era}-mcpgw-h2c", f"{era}-nginx-log")
        m = median(mw)
        verdict = goal("n", f"mcpgw CPU per forwarded tools/call / nginx's per proxied call, {era}, "
                            "middlewares on (nginx logging)", f"≤ {GOAL}", fmt(m),
                       m is not None and m <= GOAL)
        out(f"mcpgw / nginx, CPU per call, middlewares and access logs on: **{fmt(m)}**{spread(mw)} — {verdict} "
            f"(the goal beyond: ≤ {STRETCH}, {'reached' if m is not None and m <= STRETCH else 'not reached'}); "
            f"with neither: {fmt(median(bare))}{spread(bare)}; mcpgw over HTTP/2 (h2c) to the backend / nginx "
            f"(HTTP/1.1): {fmt(median(h2))}{spread(h2)}.")
        out()
        fwd = runs(results, f"{era}-forwarder")
        bare_runs = runs(results, f"{era}-mcpgw-bare")
        if fwd and bare_runs:
            def med(rs, key="cpu_s"):
                vals = [v for v in (per_call(x, "proxy", key) for x in rs) if v is not None]
                return median(vals) if vals else None
            f_all, f_sys, b_all, b_sys = med(fwd), med(fwd, "sys_s"), med(bare_runs), med(bare_runs, "sys_s")
            user = (f"; user space: the forwarder {fmt(f_all - f_sys, 1)} µs, mcpgw {fmt(b_all - b_sys, 1)} µs, "
                    f"the kernel {fmt(f_sys, 1)} and {fmt(b_sys, 1)} µs") if None not in (f_all, f_sys, b_all, b_sys) else ""
            out(f"What MCP's work costs: mcpgw with no middleware {fmt(b_all, 1)} µs per call, the forwarder (the same "
                f"actix-web and hyper, forwarding bytes and `Mcp-*` headers, no MCP work) {fmt(f_all, 1)} µs: "
                f"{fmt(b_all - f_all if None not in (b_all, f_all) else None, 1)} µs of parsing, validation against "
                f"the catalog and the principal's view, `_meta` for the backend's era, shaping and the pipeline{user}; "
                f"forwarder / nginx (no log): {fmt(median(ratios(results, f'{era}-forwarder', f'{era}-nginx-off')))}.")
            out()
        rate = {lab: runs(results, f"{era}-rate-{lab}") for lab in ("direct", "nginx-log", "mcpgw-mw")}
        if all(rate.values()):
            offered = rate["direct"][0]["load"].get("target_rps") or rate["direct"][0]["load"].get("rate")
            direct50 = median([x["load"]["latency_ms"]["p50"] for x in rate["direct"]])
            direct99 = median([x["load"]["latency_ms"]["p99"] for x in rate["direct"]])
            parts = []
            for lab, what in (("nginx-log", "nginx"), ("mcpgw-mw", "mcpgw")):
                rs = rate[lab]
                cpu = median([per_call(x, "proxy") for x in rs])
                a50 = median([x["load"]["latency_ms"]["p50"] for x in rs]) - direct50
                a99 = median([x["load"]["latency_ms"]["p99"] for x in rs]) - direct99
                thr = median([x["load"]["throughput_rps"] for x in rs])
                parts.append(f"{what} {fmt(cpu, 1)} µs of CPU per call at {fmt(thr, 0)}/s, adding "
                             f"{fmt(a50, 3)} ms at p50 and {fmt(a99, 3)} ms at p99")
            out(f"At a fixed rate both carry (open loop{f', {offered}/s offered' if offered else ''}; "
                f"the mock directly: p50 {fmt(direct50, 3)} ms, p99 {fmt(direct99, 3)} ms): " + "; ".join(parts) + ".")
            out()


def section_cli(doc, section_of, profile=None):
    """`section --results F [--dir WORK]`: one figure's section printed alone (`section_of(results, out, goal)`),
    then the profile file `profile` of the run's work directory if given; exit status 1 when a goal is missed.
    growth.py's command line too."""
    p = argparse.ArgumentParser(description=doc, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = p.add_subparsers(dest="cmd", required=True)
    s = sub.add_parser("section")
    s.add_argument("--results", required=True)
    s.add_argument("--dir", help="the run's work directory (its profile, if the figure wrote one)")
    args = p.parse_args()
    lines, goals = [], []

    def goal(gid, what, want, measured, met):
        goals.append((gid, what, want, measured, met))
        return "met" if met else "**MISSED**"

    section_of(load_results(args.results), lambda s="": lines.append(s), goal)
    text = "\n".join(lines)
    if args.dir and profile:
        path = os.path.join(args.dir, profile)
        if os.path.exists(path):
            with open(path) as f:
                text += "\n\nperf profile of mcpgw (middlewares on, modern):\n\n" + f.read()
    print(text)
    return 0 if all(g[4] for g in goals) else 1


def main():
    return section_cli(__doc__, section, "profile-n-gateway.txt")


if __name__ == "__main__":
    sys.exit(main())
