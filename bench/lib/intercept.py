#!/usr/bin/env python3
"""Figure (i) of bench/run.sh: what an interceptor costs a forwarded tools/call (issue 38 §2).

    intercept.py section --results F [--dir WORK]    the (i) section alone, from the JSON lines of a run

Runs are case "i", labels `none` (no interceptor) and `one` (one validator answering at once). CPU per call is
the gateway's own (utime+stime over the run / calls answered); each ratio is taken per repetition (the pair
measured back to back) and its median reported.
"""

import argparse
import json
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from bench import fmt, median, spread  # noqa: E402
import floor  # noqa: E402
from floor import per_call  # noqa: E402


def section(results, out):
    none, one = floor.runs(results, "none", "i"), floor.runs(results, "one", "i")
    if not none and not one:
        return
    out("## (i) an interceptor's cost: CPU per forwarded tools/call with and without one")
    out()
    out("mcpgw with its built-in middlewares on, in front of the zero-latency HTTP mock, loaded by `mcpgw load` "
        "at one fixed rate for both (`--rate`); `one` asks an `[[interceptor]]` (a validator answering at once, the tests' Python "
        "interceptor server over stdio) about every call, `none` has none; alternating rounds of the same run.")
    out()
    out("| gateway | CPU µs / call | calls/s | interceptor CPU µs / call | mock CPU µs / call | errors |")
    out("| --- | ---: | ---: | ---: | ---: | ---: |")
    for label, rs in (("none", none), ("one", one)):
        if not rs:
            out(f"| {label} | _not measured_ | | | | |")
            continue
        cpu = median([per_call(x, "proxy") for x in rs])
        thr = median([x["load"]["throughput_rps"] for x in rs])
        icpu = median([per_call(x, "interceptor") for x in rs]) if label == "one" else None
        mock = median([per_call(x, "mock") for x in rs])
        errs = sum(x["load"]["errors"] for x in rs)
        out(f"| {label} | {fmt(cpu, 1)}{spread([per_call(x, 'proxy') for x in rs])} | {fmt(thr, 0)} | "
            f"{fmt(icpu, 1) if icpu is not None else ''} | {fmt(mock, 1)} | {errs} |")
    r = floor.ratios(results, "one", "none", "i")
    if r:
        out()
        out(f"**one / none: {fmt(median(r))}**{spread(r)} (the gateway's CPU per call with the interceptor over "
            "without it, per repetition).")


def main():
    p = argparse.ArgumentParser()
    p.add_argument("command", choices=["section"])
    p.add_argument("--results", required=True)
    p.add_argument("--dir")
    a = p.parse_args()
    with open(a.results) as f:
        results = [json.loads(line) for line in f if line.strip()]
    section(results, print)


if __name__ == "__main__":
    main()
