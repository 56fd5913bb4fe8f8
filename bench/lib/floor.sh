# The floor of a forwarded call (issue 34 §1), sourced by bench/run.sh: Debian's nginx as a plain reverse proxy
# in front of the same HTTP mock as mcpgw, in the same alternating rounds as mcpgw and the mock directly.
#
# nginx as a production reverse proxy is set up: 2 worker processes (one per core here, as mcpgw's workers),
# upstream keep-alive (`keepalive`, HTTP/1.1, `Connection ""`), the body buffered as it is by default, and
# its access log in the `combined` format to a file (Debian's default, unbuffered: a write per request) when
# mcpgw's `access_log` middleware is on, `off` when it is not. Its CPU is that of the master and its workers.
# Needs: nginx (Debian's package) on PATH or in /usr/sbin; the caller's start/stop/measure/load/order/step.

NGINX_BIN="${NGINX:-$(command -v nginx 2>/dev/null || echo /usr/sbin/nginx)}"

# free_port: a TCP port on loopback that nothing listens on now (nginx cannot listen on port 0 and say which).
free_port() {
  "$PY" -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1]); s.close()'
}

# start_nginx NAME UPSTREAM_URL LOG(on|off) [MAX_BODY]: nginx in the foreground (its own process group) proxying
# every path to UPSTREAM_URL's host and port. Sets SRV_PID (the master; measure it with `+`) and SRV_URL (the
# /mcp endpoint on nginx).
start_nginx() {
  local name="$1" upstream="$2" log="$3" max_body="${4:-1m}"
  local dir="$WORK/$name" port hostport access
  hostport="$(printf '%s' "$upstream" | sed -n 's#^http://\([^/]*\)/.*#\1#p')"
  [ -n "$hostport" ] || die "start_nginx: not an http:// URL with a path: $upstream"
  mkdir -p "$dir/tmp"
  port="$(free_port)"
  access="off"
  [ "$log" = on ] && access="$dir/access.log combined"
  cat >"$dir/nginx.conf" <<EOF
daemon off;
master_process on;
worker_processes 2;
pid $dir/nginx.pid;
error_log $dir/error.log warn;
events { worker_connections 16384; }
http {
  access_log $access;
  client_body_temp_path $dir/tmp/body;
  proxy_temp_path $dir/tmp/proxy;
  fastcgi_temp_path $dir/tmp/fastcgi;
  uwsgi_temp_path $dir/tmp/uwsgi;
  scgi_temp_path $dir/tmp/scgi;
  client_max_body_size $max_body;
  client_body_buffer_size $max_body;
  keepalive_requests 1000000;
  upstream mcp_backend {
    server $hostport;
    keepalive 128;
    keepalive_requests 1000000;
  }
  server {
    listen 127.0.0.1:$port backlog=4096;
    location / {
      proxy_pass http://mcp_backend;
      proxy_http_version 1.1;
      proxy_set_header Connection "";
      proxy_buffer_size 64k;
      proxy_buffers 16 64k;
    }
  }
}
EOF
  : >"$WORK/$name.log"
  setsid "$NGINX_BIN" -p "$dir" -c "$dir/nginx.conf" </dev/null >"$WORK/$name.out" 2>"$WORK/$name.log" &
  SRV_PID=$!
  pids+=("$SRV_PID")
  SRV_URL="http://127.0.0.1:$port/mcp"
  for _ in $(seq 1 100); do
    if "$PY" -c 'import socket,sys; socket.create_connection(("127.0.0.1", int(sys.argv[1])), 0.2).close()' \
      "$port" 2>/dev/null; then
      return 0
    fi
    kill -0 "$SRV_PID" 2>/dev/null || { cat "$WORK/$name.log" "$dir/error.log" >&2 2>/dev/null; die "nginx ($name) exited during start-up"; }
    sleep 0.1
  done
  die "nginx ($name) did not listen on 127.0.0.1:$port within 10 s"
}

# The floor figure. Expects MOCK0_URL/MOCK0_PID (the zero-latency mock), writes case "n" runs:
#   {era}-direct, {era}-nginx-log, {era}-mcpgw-mw (access log and allow-list on), {era}-nginx-off,
#   {era}-forwarder (bench/echo's forwarder: actix-web and hyper, no MCP work), {era}-mcpgw-bare (no middleware), {era}-mcpgw-h2c (middlewares on, `http2 = true`: HTTP/2 prior knowledge to an h2c mock),
#   and at the fixed rate N_RATE: {era}-rate-direct, {era}-rate-nginx-log, {era}-rate-mcpgw-mw.
N_SESSIONS=${N_SESSIONS:-64}
N_RATE=${N_RATE:-5000}
figure_n() {
  command -v "$NGINX_BIN" >/dev/null 2>&1 || [ -x "$NGINX_BIN" ] || {
    printf 'nginx is not installed (apt-get install nginx-light): the floor (n) is skipped\n'; return 0; }
  step "(n) the floor: tools/call through nginx (plain reverse proxy) vs mcpgw vs direct, $N_SESSIONS sessions"
  local ngl ngo gmw gbare gh2
  start_nginx ngx-log "$MOCK0_URL" on; local NGL_PID=$SRV_PID; ngl=$SRV_URL
  start_nginx ngx-off "$MOCK0_URL" off; local NGO_PID=$SRV_PID; ngo=$SRV_URL
  gw_config "$WORK/gwn-mw.toml" "$MOCK0_URL"
  start_gw gwn-mw "$WORK/gwn-mw.toml"; local GMW_PID=$SRV_PID; gmw=$SRV_URL
  printf '[server]\nlisten = "127.0.0.1:0"\n[[backend]]\nname = "mock"\nurl = "%s"\nmax_in_flight = 4096\n' \
    "$MOCK0_URL" >"$WORK/gwn-bare.toml"
  start_gw gwn-bare "$WORK/gwn-bare.toml"; local GBARE_PID=$SRV_PID; gbare=$SRV_URL
  gw_config "$WORK/gwn-h2.toml" "$MOCK0_URL"  # the mock speaks h2c on the same port
  sed -i 's#^max_in_flight = 4096$#max_in_flight = 4096\nhttp2 = true#' "$WORK/gwn-h2.toml"
  start_gw gwn-h2 "$WORK/gwn-h2.toml"; local GH2_PID=$SRV_PID; gh2=$SRV_URL
  # The design card's stack forwarding with no MCP work (bench/echo's forwarder): mcpgw minus it is MCP's cost.
  timeout 1800 cargo build --release --locked --manifest-path "$HERE/echo/Cargo.toml" >"$WORK/forwarder-build.log" 2>&1 \
    || { tail -n 20 "$WORK/forwarder-build.log" >&2; die "bench/echo (the forwarder) did not build"; }
  start forwarder '^forwarder listening on \(http[^ ]*\)$' "$HERE/echo/target/release/forwarder" "$MOCK0_URL"
  local FWD_PID=$SRV_PID fwd=$SRV_URL
  local era rep which url pidspec labels
  for era in modern legacy; do
    for rep in $(seq 1 "$REPS"); do
      labels="direct nginx-log mcpgw-mw nginx-off forwarder mcpgw-bare mcpgw-h2c"
      [ $(( rep % 2 )) = 0 ] && labels="mcpgw-h2c mcpgw-bare forwarder nginx-off mcpgw-mw nginx-log direct"
      for which in $labels; do
        case "$which" in
          direct) url=$MOCK0_URL; pidspec=() ;;
          nginx-log) url=$ngl; pidspec=(--pid proxy="$NGL_PID+") ;;
          nginx-off) url=$ngo; pidspec=(--pid proxy="$NGO_PID+") ;;
          forwarder) url=$fwd; pidspec=(--pid proxy="$FWD_PID") ;;
          mcpgw-mw) url=$gmw; pidspec=(--pid proxy="$GMW_PID") ;;
          mcpgw-bare) url=$gbare; pidspec=(--pid proxy="$GBARE_PID") ;;
          mcpgw-h2c) url=$gh2; pidspec=(--pid proxy="$GH2_PID") ;;
        esac
        measure n "$era-$which" "$rep" "${pidspec[@]}" --pid mock="$MOCK0_PID" -- \
          $(load --url "$url" --era "$era" --sessions "$N_SESSIONS" --duration "${DUR}s")
      done
      labels="direct nginx-log mcpgw-mw"
      [ $(( rep % 2 )) = 0 ] && labels="mcpgw-mw nginx-log direct"
      for which in $labels; do
        case "$which" in
          direct) url=$MOCK0_URL; pidspec=() ;;
          nginx-log) url=$ngl; pidspec=(--pid proxy="$NGL_PID+") ;;
          mcpgw-mw) url=$gmw; pidspec=(--pid proxy="$GMW_PID") ;;
        esac
        measure n "$era-rate-$which" "$rep" "${pidspec[@]}" --pid mock="$MOCK0_PID" -- \
          $(load --url "$url" --era "$era" --sessions "$N_SESSIONS" --duration "${DUR}s" --rate "${N_RATE}/s")
      done
    done
  done
  if command -v perf >/dev/null 2>&1; then
    measure n profile 0 --pid proxy="$GMW_PID" --pid mock="$MOCK0_PID" \
      --perf proxy --perf-out "$WORK/profile-n-gateway.txt" --perf-delay 1 --perf-seconds 3 -- \
      $(load --url "$gmw" --sessions "$N_SESSIONS" --duration 5s) || true
  fi
  stop "$FWD_PID"; stop "$GH2_PID"; stop "$GBARE_PID"; stop "$GMW_PID"; stop "$NGO_PID"; stop "$NGL_PID"
}
