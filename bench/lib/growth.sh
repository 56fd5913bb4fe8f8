# Figure (k) of bench/run.sh (sourced by it): how the cost of a forwarded tools/call grows (issue 34 §3).
#
# mcpgw with its two built-in middlewares on (gw_config), CPU per forwarded call measured as the catalog, the
# idle legacy sessions held, the size of the call's arguments and the number of backends grow. Each row is
# measured beside its baseline in the same run, in alternating order per repetition ($REPS of $K_DUR s):
#   tools     10 / 1,000 / 10,000 tools in the catalog (5 backends, a mock each), each size on mocks and a
#             gateway of its own, the call to the last tool; baseline: 10 tools. `page_size = 1000`
#             on all three so that the load's probe (100 pages at most) finds that tool.
#   sessions  0 / 10,000 / 100,000 idle legacy sessions held on the gateway (opened by bench.py `sessions`,
#             max_sessions 150,000, session_idle_secs 7200); the load is legacy sessions of its own; baseline:
#             a second gateway of the same config holding none, measured beside each count.
#   args      tools/call arguments of 100 B, 10 KB and 1 MB (`{"text":"xx…"}`, that many bytes of JSON) to a
#             synthetic tool answering 16 bytes (`--payload-bytes 16`), so the bytes grow one way; baseline:
#             nginx (access log on, client_max_body_size 2m) in front of the same mock with the same body.
#             The arguments are given in a scenario file (`mcpgw load --scenario`): a 1 MB `--args` is over
#             Linux's limit on one command-line argument (128 KiB). mcpgw's max_body_bytes (4 MiB by default)
#             and the mock's (16 MiB, fixed) already take 1 MB: nothing is raised on their side.
#   backends  1 / 10 / 50 backends, each a mock process of its own (`--name`), the call always to the same
#             one (`target__echo`, listed last) so the backend side is identical; baseline: 1 backend.
# Runs are case "k", labels "{row}-{setting}[-base|-mcpgw|-nginx]"; the proxy's CPU is `proxy` (nginx: master
# and workers), the called mock's `mock`. Needs the caller's start/stop/start_mock/start_gw/gw_config/measure/
# load/order/step/admin_url/start_nginx, and $K_DUR, $REPS, $WORK, $RESULTS.

K_SESSIONS=${K_SESSIONS:-32}
K_TOOLS="10 1000 10000"
K_IDLE="10000 100000"
K_SIZES="100 10240 1048576"
K_BACKENDS="1 10 50"
K_MAX_SESSIONS=150000

# k_run LABEL REP PROXY_PID MOCK_PID URL [LOAD ARGS]...: one measured load on URL.
k_run() {
  local label="$1" rep="$2" proxy="$3" mock="$4" url="$5"; shift 5
  measure k "$label" "$rep" --pid proxy="$proxy" --pid mock="$mock" -- \
    $(load --url "$url" --sessions "$K_SESSIONS" --duration "${K_DUR}s" "$@")
}
# k_warm URL [LOAD ARGS]...: half a second of the same load, not measured (first connections, caches).
k_warm() {
  local url="$1"; shift
  "$MCPGW" load --url "$url" --sessions 4 --duration 500ms --no-progress "$@" >>"$WORK/k-warm.log" 2>&1 \
    || printf '    (warm-up of %s failed: see %s)\n' "$url" "$WORK/k-warm.log"
}
# k_stop PID...: stops them together (a gateway drains for 5 s: signalled at once, they drain at once).
k_stop() {
  local p
  for p in "$@"; do kill -TERM -- "-$p" 2>/dev/null || true; done
  for p in "$@"; do stop "$p"; done
}
# k_cycle REP SETTINGS...: the settings of a row in turn, reversed every other repetition.
k_cycle() {
  local rep="$1"; shift
  if [ $(( rep % 2 )) = 1 ]; then echo "$@"; else echo "$@" | tr ' ' '\n' | tac | tr '\n' ' '; fi
}

# The catalog: K_TOOL_BACKENDS backends, a mock process each (`--name`: their resources must not collide) of
# N / K_TOOL_BACKENDS synthetic tools (the gateway lists at most 100 pages of a backend and the mock pages by 50:
# one backend brings at most 5,000 tools), each keeping only the synthetic ones (`tools = { allow = ["tool_*"] }`,
# the mock's 9 fixed tools left out) so that the catalog holds exactly N; the call is to the last backend's
# last tool, and its mock is the one measured.
K_TOOL_BACKENDS=5
k_tools() {
  step "(k) CPU per forwarded call by catalog size: ${K_TOOLS// /, } tools ($K_TOOL_BACKENDS backends)"
  local -A gpid gurl mpid tool
  local n rep i cfg all=()
  for n in $K_TOOLS; do
    cfg="$WORK/gwk-t$n.toml"
    printf '[server]\nlisten = "127.0.0.1:0"\npage_size = 1000\n' >"$cfg"
    for i in $(seq 1 "$K_TOOL_BACKENDS"); do
      start_mock "mockk-t$n-$i" --tools $(( n / K_TOOL_BACKENDS )) --name "t$i"; all+=("$SRV_PID")
      printf '[[backend]]\nname = "t%s"\nurl = "%s"\nmax_in_flight = 4096\ntools = { allow = ["tool_*"] }\n\n' \
        "$i" "$SRV_URL" >>"$cfg"
    done
    mpid[$n]=$SRV_PID
    printf '%s' "$MIDDLEWARES" >>"$cfg"
    start_gw "gwk-t$n" "$cfg"; gpid[$n]=$SRV_PID; gurl[$n]=$SRV_URL
    tool[$n]="t${K_TOOL_BACKENDS}__tool_$(( n / K_TOOL_BACKENDS - 1 ))"
    k_warm "${gurl[$n]}" --tool "${tool[$n]}"
  done
  for rep in $(seq 1 "$REPS"); do
    for n in $(k_cycle "$rep" $K_TOOLS); do
      k_run "tools-$n" "$rep" "${gpid[$n]}" "${mpid[$n]}" "${gurl[$n]}" --tool "${tool[$n]}"
    done
  done
  k_stop "${gpid[@]}" "${all[@]}"
}

k_held() { # LABEL ADMIN_URL: the sessions the gateway holds now (its admin /readyz), recorded
  "$PY" - "$1" "$2" "$RESULTS" <<'EOF'
import json, sys, urllib.request
try:
    n = json.load(urllib.request.urlopen(sys.argv[2] + "/readyz", timeout=10)).get("sessions")
except (OSError, ValueError):
    n = None
with open(sys.argv[3], "a") as f:
    f.write(json.dumps({"case": "k-held", "label": sys.argv[1], "sessions": n}) + "\n")
print(f"    the gateway holds {n} sessions")
EOF
}

k_sessions() {
  step "(k) CPU per forwarded call (legacy) by idle legacy sessions held: 0, ${K_IDLE// /, }"
  start_mock mockk-s; local MPID=$SRV_PID MURL=$SRV_URL
  local extra
  extra="$(printf 'max_sessions = %s\nsession_idle_secs = 7200\n[admin]\nlisten = "127.0.0.1:0"' "$K_MAX_SESSIONS")"
  gw_config "$WORK/gwk-s.toml" "$MURL" "$extra"
  start_gw gwk-s "$WORK/gwk-s.toml"; local SPID=$SRV_PID SURL=$SRV_URL
  start_gw gwk-s0 "$WORK/gwk-s.toml"; local BPID=$SRV_PID BURL=$SRV_URL
  local admin c rep which held=0 warmup=1000
  admin="$(admin_url gwk-s)"
  k_warm "$SURL" --era legacy; k_warm "$BURL" --era legacy
  for c in $K_IDLE; do
    printf '    opening %s more idle legacy sessions (bench.py sessions)\n' "$(( c - held ))"
    timeout 600 "$PY" "$BENCH_PY" sessions --url "$SURL" --admin-url "$admin" --pid "$SPID" \
      --counts "$(( c - held ))" --warmup "$warmup" --sample 100 --max-sessions "$K_MAX_SESSIONS" \
      --out "$WORK/k-sessions.jsonl" | sed 's/^/  /' || printf '    (opening had errors: see above)\n'
    held=$c; warmup=0
    k_held "sessions-$c" "$admin"
    for rep in $(seq 1 "$REPS"); do
      for which in $(order "$rep" base held); do
        if [ "$which" = base ]; then
          k_run "sessions-$c-base" "$rep" "$BPID" "$MPID" "$BURL" --era legacy
        else
          k_run "sessions-$c" "$rep" "$SPID" "$MPID" "$SURL" --era legacy
        fi
      done
    done
    k_held "sessions-$c-after" "$admin"
  done
  k_stop "$BPID" "$SPID" "$MPID"
}

# k_scenario FILE TOOL BYTES: a scenario of K_SESSIONS modern sessions calling TOOL with arguments of BYTES
# bytes of JSON ({"text":"xx…"}), the same request over and over.
k_scenario() {
  "$PY" - "$@" "$K_SESSIONS" <<'EOF'
import sys
path, tool, size, sessions = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
text = "x" * max(0, size - len('{"text":""}'))
with open(path, "w") as f:
    f.write(f'[[group]]\nname = "k"\nsessions = {sessions}\nera = "modern"\n\n'
            f'[[group.step]]\ndo = "tools/call"\ntool = "{tool}"\narguments = {{ text = "{text}" }}\n')
EOF
}

k_args() {
  step "(k) CPU per forwarded call by argument size: 100 B, 10 KB, 1 MB; mcpgw vs nginx (access log on)"
  start_mock mockk-a --payload-bytes 16; local MPID=$SRV_PID MURL=$SRV_URL
  gw_config "$WORK/gwk-a.toml" "$MURL"
  start_gw gwk-a "$WORK/gwk-a.toml"; local GPID=$SRV_PID GURL=$SRV_URL
  local NPID="" NURL="" sides="nginx mcpgw"
  if command -v "$NGINX_BIN" >/dev/null 2>&1 || [ -x "$NGINX_BIN" ]; then
    start_nginx ngxk-a "$MURL" on 2m; NPID=$SRV_PID; NURL=$SRV_URL
  else
    printf 'nginx is not installed (apt-get install nginx-light): the argument sizes have no baseline\n'; sides=mcpgw
  fi
  local size rep which
  for size in $K_SIZES; do
    k_scenario "$WORK/k-args-$size-mcpgw.toml" mock__tool_0 "$size"
    k_scenario "$WORK/k-args-$size-nginx.toml" tool_0 "$size"
  done
  k_warm "$GURL" --tool mock__tool_0; [ -z "$NURL" ] || k_warm "$NURL" --tool tool_0
  for rep in $(seq 1 "$REPS"); do
    for size in $(k_cycle "$rep" $K_SIZES); do
      for which in $(order "$rep" $sides); do
        if [ "$which" = nginx ]; then
          measure k "args-$size-nginx" "$rep" --pid proxy="$NPID+" --pid mock="$MPID" -- \
            $(load --url "$NURL" --duration "${K_DUR}s" --scenario "$WORK/k-args-$size-nginx.toml")
        else
          measure k "args-$size-mcpgw" "$rep" --pid proxy="$GPID" --pid mock="$MPID" -- \
            $(load --url "$GURL" --duration "${K_DUR}s" --scenario "$WORK/k-args-$size-mcpgw.toml")
        fi
      done
    done
  done
  k_stop $NPID "$GPID" "$MPID"
}

k_backends() {
  step "(k) CPU per forwarded call by backends configured: ${K_BACKENDS// /, } (a mock process each)"
  local max=0 n i rep
  for n in $K_BACKENDS; do if [ "$n" -gt "$max" ]; then max=$n; fi; done
  start_mock mockk-b00 --name target; local TPID=$SRV_PID TURL=$SRV_URL
  local others=() urls=()
  for i in $(seq 1 $(( max - 1 ))); do
    start_mock "mockk-b$i" --name "m$i"; others+=("$SRV_PID"); urls+=("$SRV_URL")
  done
  local -A gpid gurl
  for n in $K_BACKENDS; do
    {  # as gw_config, with the others before the target: it is the last backend listed
      printf '[server]\nlisten = "127.0.0.1:0"\n'
      for i in $(seq 1 $(( n - 1 ))); do
        printf '[[backend]]\nname = "b%02d"\nurl = "%s"\nmax_in_flight = 4096\n\n' "$i" "${urls[$((i - 1))]}"
      done
      printf '[[backend]]\nname = "target"\nurl = "%s"\nmax_in_flight = 4096\n\n%s' "$TURL" "$MIDDLEWARES"
    } >"$WORK/gwk-b$n.toml"
    start_gw "gwk-b$n" "$WORK/gwk-b$n.toml"; gpid[$n]=$SRV_PID; gurl[$n]=$SRV_URL
    k_warm "${gurl[$n]}" --tool target__echo
  done
  for rep in $(seq 1 "$REPS"); do
    for n in $(k_cycle "$rep" $K_BACKENDS); do
      k_run "backends-$n" "$rep" "${gpid[$n]}" "$TPID" "${gurl[$n]}" --tool target__echo
    done
  done
  k_stop "${gpid[@]}" "$TPID" "${others[@]}"
}

figure_k() {
  k_tools
  k_sessions
  k_args
  k_backends
}
