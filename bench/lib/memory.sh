# Figures (d) and (h) of bench/run.sh (sourced by it): resident memory per idle legacy session and per idle
# keep-alive connection. Uses the caller's start/stop/start_gw/start_mock and its variables.

# (h) idle keep-alive connections: mcpgw with the built-in mock (no backend process), $H_COUNT connections.
figure_h() {
  step "(h) idle keep-alive connections: RSS of mcpgw at $H_COUNT connections, each after one GET /healthz"
  # mcpgw raises its own soft open-files limit to the hard one, but a binary from before issue 11 does not,
  # and the driver needs as many: this shell's soft limit goes up first (its children inherit it).
  ulimit -n "$(ulimit -Hn)" 2>/dev/null || true
  printf '[server]\nlisten = "127.0.0.1:0"\n[[backend]]\nname = "mock"\nbuiltin = ["mock-backend"]\n' >"$WORK/gwh.toml"
  start_gw gwh "$WORK/gwh.toml"; GWH_PID=$SRV_PID; GWH_URL=$SRV_URL
  timeout 300 "$PY" "$HERE/lib/idle_conns.py" measure --url "$GWH_URL" --pid "$GWH_PID" --count "$H_COUNT" \
    --out "$RESULTS" || printf '    (this run had errors: see above)\n'
  stop "$GWH_PID"
}

# (d) idle legacy sessions. Both gateways without middlewares and with logs at warn (a line per request or per
# session would be 2-3 million lines at 1,000,000 sessions); the driver uses one keep-alive connection per
# process (and one for the pings): no ephemeral ports or descriptors are needed beyond that.
d_config() { # FILE BACKEND_URL MAX_SESSIONS
  printf '[server]\nlisten = "127.0.0.1:0"\nmax_sessions = %s\nsession_idle_secs = 7200\n[admin]\nlisten = "127.0.0.1:0"\n[[backend]]\nname = "mock"\nurl = "%s"\nmax_in_flight = 4096\n' \
    "$3" "$2" >"$1"
}
# admin_url NAME: the admin listener's base URL that the gateway started as NAME printed (its /readyz counts
# the sessions; the front door's says the status alone).
admin_url() { sed -n 's#^mcpgw admin view on \(http[^ ]*\)/admin/$#\1#p' "$WORK/$1.log" | head -n 1; }
d_gw() { # NAME CONFIG [VAR=VALUE]...: a (d) gateway with logs at warn and the variables given
  local name="$1" config="$2"; shift 2
  start "$name" "$GW_RE" env RUST_LOG=warn "$@" "$MCPGW" serve --config "$config"
}
figure_d() {
  local small="" large="" c
  for c in ${D_COUNTS//,/ }; do
    if [ "$c" -le "$D_ACTORS" ]; then small="${small:+$small,}$c"; else large="${large:+$large,}$c"; fi
  done
  step "(d) idle legacy sessions: RSS of mcpgw at ${D_COUNTS//,/, } sessions"
  start_mock mockd; MOCKD_PID=$SRV_PID; MOCKD_URL=$SRV_URL
  if [ -n "$small" ]; then
    d_config "$WORK/gwd.toml" "$MOCKD_URL" "$D_ACTORS"
    d_gw gwd "$WORK/gwd.toml"; GWD_PID=$SRV_PID; GWD_URL=$SRV_URL
    timeout 900 "$PY" "$BENCH_PY" sessions --url "$GWD_URL" --admin-url "$(admin_url gwd)" --pid "$GWD_PID" \
      --counts "$small" \
      --max-sessions "$D_ACTORS" --out "$RESULTS" || printf '    (this run had errors: see above)\n'
    stop "$GWD_PID"
  fi
  if [ -n "$large" ]; then
    # Two replicas sharing a key ring: the second is only asked at the end, for sessions it never saw.
    local ring
    ring="$("$MCPGW" cluster new-key)"
    d_config "$WORK/gwd-rest.toml" "$MOCKD_URL" "$D_REST_MAX"
    d_gw gwd-rest "$WORK/gwd-rest.toml" MCPGW_SESSION_KEYS="$ring"; GWDR_PID=$SRV_PID; GWDR_URL=$SRV_URL
    d_gw gwd-replica "$WORK/gwd-rest.toml" MCPGW_SESSION_KEYS="$ring"; GWDO_PID=$SRV_PID; GWDO_URL=$SRV_URL
    printf '    the gateway (max_sessions = %s) %s; a second replica with the same key ring %s\n' \
      "$D_REST_MAX" "$GWDR_URL" "$GWDO_URL"
    timeout $(( D_OPEN_SECS + 300 )) "$PY" "$BENCH_PY" sessions --url "$GWDR_URL" --pid "$GWDR_PID" \
      --counts "$large" --also-at "$D_REST_MAX" --max-sessions "$D_REST_MAX" --sample 1000 \
      --replica-url "$GWDO_URL" --replica-admin-url "$(admin_url gwd-replica)" --admin-url "$(admin_url gwd-rest)" \
      --max-seconds "$D_OPEN_SECS" --out "$RESULTS" \
      || printf '    (this run had errors or failed checks: see above)\n'
    stop "$GWDO_PID"; stop "$GWDR_PID"
  fi
  stop "$MOCKD_PID"
}

