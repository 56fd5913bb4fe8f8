# Figure (i) of bench/run.sh (sourced by it): what an interceptor costs a forwarded tools/call (issue 38 §2).
#
# Two gateways in front of the same zero-latency HTTP mock, with the built-in middlewares on (gw_config): one
# without interceptors, one with an [[interceptor]] asking one validator that answers at once (`warn-only` of
# tests/fixtures/interceptors/server.py, a stdio server in Python, run by the gateway) about every tools/call.
# Alternating rounds ($REPS of $DUR s) at one fixed rate for both ($I_RATE: below what the Python server
# answers, so both gateways do the same work per second and their CPU per call compares); case "i", labels
# `none` and `one`. The proxy's CPU is the gateway's own; the interceptor server's is `interceptor`.
I_SESSIONS=${I_SESSIONS:-32}
I_RATE=${I_RATE:-1500}
figure_i() {
  step "(i) an interceptor's cost: tools/call through mcpgw with and without an [[interceptor]] answering at once"
  gw_config "$WORK/gwi-none.toml" "$MOCK0_URL"
  start_gw gwi-none "$WORK/gwi-none.toml"; local NONE_PID=$SRV_PID none=$SRV_URL
  gw_config "$WORK/gwi-one.toml" "$MOCK0_URL"
  printf '\n[[interceptor]]\nname = "local"\ncommand = ["%s", "%s"]\nuse = ["warn-only"]\nevents = ["tools/call"]\nmax_in_flight = 256\n' \
    "$PY" "$ROOT/tests/fixtures/interceptors/server.py" >>"$WORK/gwi-one.toml"
  start_gw gwi-one "$WORK/gwi-one.toml"; local ONE_PID=$SRV_PID one=$SRV_URL
  "$MCPGW" load --url "$one" --sessions 2 --duration 1s --no-progress >>"$WORK/i-warm.log" 2>&1 || true
  local INT_PID
  INT_PID="$(first_child "$ONE_PID")"
  [ -n "$INT_PID" ] || die "(i): the interceptor server is not running under the gateway"
  local rep which labels
  for rep in $(seq 1 "$REPS"); do
    labels="none one"
    [ $(( rep % 2 )) = 0 ] && labels="one none"
    for which in $labels; do
      case "$which" in
        none) measure i none "$rep" --pid proxy="$NONE_PID" --pid mock="$MOCK0_PID" -- \
          $(load --url "$none" --sessions "$I_SESSIONS" --duration "${DUR}s" --rate "${I_RATE}/s") ;;
        one) measure i one "$rep" --pid proxy="$ONE_PID" --pid interceptor="$INT_PID" --pid mock="$MOCK0_PID" -- \
          $(load --url "$one" --sessions "$I_SESSIONS" --duration "${DUR}s" --rate "${I_RATE}/s") ;;
      esac
    done
  done
  stop "$ONE_PID"; stop "$NONE_PID"
}
