#!/usr/bin/env bash
# Instructions per forwarded tools/call (issue 34): the gateway run under valgrind's callgrind, which counts
# the user-space instructions of all its threads — the same for the same binary and load whatever else the
# machine does, so two builds compare on a busy host where CPU time does not. Kernel time (the TCP exchanges,
# wake-ups) is not counted: `bench/run.sh --only n` measures the whole CPU per call against nginx.
#
#   bench/lib/instructions.sh MCPGW mw|bare N [modern|legacy]
#
# Starts `MCPGW mock-backend` and `MCPGW serve` (under callgrind) in front of it, with the two built-in
# middlewares (`mw`) or none (`bare`); 300 calls to warm up, the counters zeroed, N calls (8 sessions, closed
# loop) counted; prints the instructions per call. BACKEND_EXTRA adds lines to the backend's table (for
# example `http2 = true`). Needs valgrind; takes about 10 s per 2,000 calls.
BIN=$1; MODE=$2; N=$3; ERA=${4:-modern}
W=$(mktemp -d "${TMPDIR:-/tmp}/mcpgw-instructions.XXXXXX")
setsid $BIN mock-backend --listen 127.0.0.1:0 </dev/null >$W/mock.out 2>$W/mock.log & MP=$!
for i in $(seq 50); do M=$(sed -n 's#^mock-backend listening on \(http[^ ]*\)$#\1#p' $W/mock.log); [ -n "$M" ] && break; sleep 0.1; done
{ printf '[server]\nlisten = "127.0.0.1:0"\n[[backend]]\nname = "mock"\nurl = "%s"\nmax_in_flight = 4096\n%s\n' "$M" "${BACKEND_EXTRA:-}"
  if [ "$MODE" = mw ]; then printf '[[middleware]]\nkind = "access_log"\n\n[[middleware]]\nkind = "allow_methods"\nmethods = ["initialize", "server/discover", "tools/list", "tools/call", "ping"]\n'; fi; } > $W/gw.toml
setsid valgrind --tool=callgrind --callgrind-out-file=$W/cg.out $BIN serve --config $W/gw.toml </dev/null >$W/gw.out 2>$W/gw.log & GP=$!
for i in $(seq 600); do G=$(sed -n 's#^mcpgw listening on \(http[^ ]*\) .*$#\1#p' $W/gw.log); [ -n "$G" ] && break; sleep 0.1; done
[ -n "$G" ] || { tail $W/gw.log; exit 1; }
$BIN load --url $G --era $ERA --sessions 8 --requests 300 --no-progress >/dev/null 2>&1
callgrind_control -z $GP >/dev/null 2>&1
$BIN load --url $G --era $ERA --sessions 8 --requests $N --no-progress --json $W/load.json >/dev/null 2>&1
callgrind_control --dump=measured $GP >/dev/null 2>&1
sleep 1
R=$(python3 -c "import json;print(json.load(open('$W/load.json'))['requests'])")
F=$(grep -l "measured" $W/cg.out* | head -1)
IR=$(grep -E "^(summary|totals):" $F | head -1 | awk '{print $2}')
echo "$(basename $BIN) $MODE $ERA requests=$R Ir/call=$((IR / R))"
kill -TERM -- -$MP 2>/dev/null; kill -TERM $GP 2>/dev/null; sleep 1; kill -KILL -- -$GP 2>/dev/null
rm -rf $W
