#!/usr/bin/env python3
"""Figure (k) of bench/run.sh: how the cost of a forwarded tools/call grows (issue 34 §3).

    growth.py section --results F [--dir WORK]    the (k) section alone, from the JSON lines of a run

The runs are case "k" (bench/lib/growth.sh): labels tools-N, sessions-N and sessions-N-base, args-BYTES-mcpgw and
args-BYTES-nginx, backends-N; `k-held` lines give the sessions the gateway held. CPU per call of the proxy is its
CPU over the run (nginx: master and workers) divided by the calls answered; each figure is the median over the
repetitions, and each ratio is taken per repetition (the pair measured back to back) and its median reported.
The issue expects the gateway's own cost flat in catalog size and idle sessions and linear in bytes with a
small constant.
"""

import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from bench import fmt, median, spread  # noqa: E402
import floor  # noqa: E402  (its run and ratio readers, keyed by case)
from floor import per_call  # noqa: E402

FLAT = 1.15  # a growth factor within this is called flat: the noise of a short run on this shared machine
TOOLS = (10, 1000, 10000)
IDLE = (10000, 100000)
SIZES = (100, 10240, 1048576)
BACKENDS = (1, 10, 50)


def runs(results, label):
    return floor.runs(results, label, "k")


def ratios(results, subject, base):
    return floor.ratios(results, subject, base, "k")


def cpu(rs, name="proxy"):
    return median([per_call(x, name) for x in rs])


def thr(rs):
    return median([x["load"]["throughput_rps"] for x in rs])


def size_name(n):
    return f"{n // 1048576} MB" if n >= 1048576 else f"{n // 1024} KB" if n >= 1024 else f"{n} B"


def held(results, label):
    for x in results:
        if x.get("case") == "k-held" and x.get("label") == label:
            return x.get("sessions")
    return None


def section(results, out, goal):
    if not any(x.get("case") == "k" for x in results):
        return
    out("## (k) how cost grows: CPU per forwarded tools/call by catalog size, idle sessions, argument size and "
        "backends")
    out()
    k_runs = [x for x in results if x.get("case") == "k" and x.get("load")]
    reps = max((x.get("rep") or 1) for x in k_runs) if k_runs else 0
    dur = median([x["load"].get("duration_s") for x in k_runs])
    out(f"mcpgw with its two built-in middlewares on (`access_log`, `allow_methods`), loaded by `mcpgw load` "
        f"(closed loop, {reps} repetition(s) of {fmt(dur, 0)} s per subject); each row measured beside its "
        "baseline in alternating rounds of the same run. CPU per call "
        "is the proxy's own (utime+stime over the run / calls answered; nginx: master and workers); the mock's is "
        "beside it. Baselines: the smallest setting of the same row (10 tools; a second gateway of the same "
        "config holding no idle session, measured beside each count; 1 backend), and for the argument sizes "
        "nginx (access log on, `client_max_body_size 2m`) in front of the same mock with the same body.")
    out()
    out("| row | mcpgw CPU µs / call | baseline | baseline CPU µs / call | mcpgw / baseline | mcpgw calls/s | "
        "baseline calls/s | mock CPU µs / call | errors |")
    out("| --- | ---: | --- | ---: | ---: | ---: | ---: | ---: | ---: |")
    growth = {}

    def row(what, subject, base, base_what):
        s, b = runs(results, subject), runs(results, base) if base else []
        if not s:
            out(f"| {what} | _not measured_ | | | | | | | |")
            return
        r = ratios(results, subject, base) if base else []
        errs = sum(x["load"]["errors"] for x in s + b)
        out(f"| {what} | {fmt(cpu(s), 1)}{spread([per_call(x, 'proxy') for x in s])} | {base_what} | "
            f"{fmt(cpu(b), 1) if b else ''} | {fmt(median(r)) if r else ''}{spread(r)} | {fmt(thr(s), 0)} | "
            f"{fmt(thr(b), 0) if b else ''} | {fmt(cpu(s, 'mock'), 1)} | {errs} |")
        return r

    for n in TOOLS:
        base = None if n == TOOLS[0] else f"tools-{TOOLS[0]}"
        growth[("tools", n)] = row(f"{n:,} tools in the catalog", f"tools-{n}", base,
                                   "" if base is None else f"{TOOLS[0]} tools")
    base0 = [x for c in IDLE for x in runs(results, f"sessions-{c}-base")]
    if base0:
        out(f"| 0 idle legacy sessions (the baseline gateway, all its runs) | {fmt(cpu(base0), 1)}"
            f"{spread([per_call(x, 'proxy') for x in base0])} | | | | {fmt(thr(base0), 0)} | | "
            f"{fmt(cpu(base0, 'mock'), 1)} | {sum(x['load']['errors'] for x in base0)} |")
    for c in IDLE:
        h = held(results, f"sessions-{c}")
        growth[("sessions", c)] = row(f"{c:,} idle legacy sessions held ({fmt(h, 0) if h is not None else '?'} "
                                      "by its /readyz)", f"sessions-{c}", f"sessions-{c}-base",
                                      "0 sessions, beside")
    for n in SIZES:
        growth[("args", n)] = row(f"arguments of {size_name(n)}", f"args-{n}-mcpgw", f"args-{n}-nginx",
                                  "nginx, same body")
    for n in BACKENDS:
        base = None if n == BACKENDS[0] else f"backends-{BACKENDS[0]}"
        growth[("backends", n)] = row(f"{n} backend{'s' if n > 1 else ''}", f"backends-{n}", base,
                                      "" if base is None else f"{BACKENDS[0]} backend")
    out()
    out("Tools: 5 backends, a mock each with N / 5 synthetic tools (one backend brings at most 5,000: the gateway "
        "lists 100 pages of a backend, the mock pages by 50), only those kept (`tools = { allow = [\"tool_*\"] }`), "
        "so the catalog holds exactly N; the call is to the last backend's last tool (`t5__tool_{N/5-1}`), "
        "`page_size = 1000`; modern requests. Idle sessions: opened by `bench.py sessions` (legacy, `initialize` + `initialized`) "
        "and left idle (`max_sessions = 150000`, `session_idle_secs = 7200`); the load is legacy sessions of its "
        "own. Arguments: `{\"text\":\"xx…\"}` of that many bytes to a synthetic tool answering 16 bytes, from a "
        "scenario file (`mcpgw load --scenario`); modern requests. Backends: a mock process each, the call "
        "always to the same one (`target__echo`, the last listed); modern requests.")
    out()

    def verdict(kind, settings, what):
        runs_ = [growth.get((kind, n)) or [] for n in settings[1:]]
        if not all(runs_):
            return f"{what}: not measured."
        got = [median(r) for r in runs_]
        reps = min(len(r) for r in runs_)
        word = "flat" if round(max(got), 2) <= FLAT else "**not flat**"
        steps = ", ".join(f"{fmt(g)}× at {n:,}" for g, n in zip(got, settings[1:]))
        note = (" — one repetition each: a single pair, and pairs of the same setting differ by up to ±20% "
                "on this shared machine" if reps == 1 else f", medians of {reps} repetitions")
        return f"{what}: {word} ({steps}; each factor within {FLAT}× is called flat here{note})."

    parts = [verdict("tools", TOOLS, "Catalog size"), verdict("sessions", (0,) + IDLE, "Idle sessions"),
             verdict("backends", BACKENDS, "Backends")]
    # Bytes: the marginal CPU per byte of arguments, from the medians (each side's own runs).
    per_byte = {}
    for who in ("mcpgw", "nginx"):
        c = {n: cpu(runs(results, f"args-{n}-{who}")) for n in SIZES}
        if all(c[n] is not None for n in SIZES):
            per_byte[who] = ((c[SIZES[1]] - c[SIZES[0]]) / (SIZES[1] - SIZES[0]) * 1000,
                             (c[SIZES[2]] - c[SIZES[1]]) / (SIZES[2] - SIZES[1]) * 1000)
    if per_byte:
        parts.append("Bytes, the added CPU per byte of arguments (100 B → 10 KB, 10 KB → 1 MB): " + "; ".join(
            f"{who} {fmt(a, 2)} and {fmt(b, 2)} ns/B" for who, (a, b) in per_byte.items())
            + (f" — mcpgw's marginal cost per byte {fmt(per_byte['mcpgw'][1] / per_byte['nginx'][1])}× nginx's"
               if "mcpgw" in per_byte and "nginx" in per_byte and per_byte["nginx"][1] else "") + ".")
    mock = {n: cpu(runs(results, f"args-{n}-mcpgw"), "mock") for n in SIZES}
    if mock[SIZES[2]] is not None and mock[SIZES[0]] is not None:
        parts.append(f"The mock itself (it parses the body) adds "
                     f"{fmt((mock[SIZES[2]] - mock[SIZES[0]]) / (SIZES[2] - SIZES[0]) * 1000, 2)} ns/B.")
    other = median([x["cores"].get("other") for x in k_runs])
    if other is not None:
        parts.append(f"Everything else the machine ran during these runs (`other`, from /proc/stat): median "
                     f"{fmt(other)} cores; on a shared machine CPU per call rises with it (fewer calls per wake-up), "
                     f"so compare each row with the baseline measured beside it rather than across rows.")
    for p in parts:
        out(f"- {p}")
    out()


def main():
    return floor.section_cli(__doc__, section)


if __name__ == "__main__":
    sys.exit(main())
