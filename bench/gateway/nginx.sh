# Sourced by bench/gateway/run and bench/gateway/streams: nginx (Debian nginx-light) as a plain reverse
# proxy to the model stub, the floor for a proxy's cost. Uses the caller's $tmp and pids array.
# keepalive_requests: nginx closes a keep-alive connection after 1,000 requests by default (client side
# and upstream side); the gateway's server and provider pool never do, so both limits are lifted. With the
# default, gateway_paced_load (32 connections, the busiest taking most of 15,000 requests a round) saw
# nginx close a connection every 1,000 requests and counted 8-14 errors a round (2026-12-01, gw-streams).
nginx="$(command -v nginx || echo /usr/sbin/nginx)"

# start_nginx UPSTREAM_PORT WORKERS CONNECTIONS [CPU]: sets started_port and started_pid (the master);
# CPU pins the master and so its workers.
start_nginx() {
  local d="$tmp/nginx" port pin=()
  [ -n "${4:-}" ] && pin=(taskset -c "$4")
  rm -rf "$d"
  mkdir -p "$d/logs" "$d/tmp"
  port="$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')"
  cat >"$d/nginx.conf" <<CONF
daemon off;
master_process on;
worker_processes $2;
worker_rlimit_nofile $3;
pid $d/nginx.pid;
error_log $d/logs/error.log warn;
events { worker_connections $3; }
http {
  access_log off;
  keepalive_requests 1000000;
  client_body_temp_path $d/tmp/body;
  proxy_temp_path $d/tmp/proxy;
  fastcgi_temp_path $d/tmp/fastcgi;
  uwsgi_temp_path $d/tmp/uwsgi;
  scgi_temp_path $d/tmp/scgi;
  upstream stub { server 127.0.0.1:$1; keepalive 64; keepalive_requests 1000000; }
  server {
    listen 127.0.0.1:$port backlog=4096;
    location / {
      proxy_pass http://stub;
      proxy_http_version 1.1;
      proxy_set_header Connection "";
      proxy_buffering off;
      proxy_read_timeout 600s;
    }
  }
}
CONF
  "${pin[@]}" "$nginx" -p "$d/" -c "$d/nginx.conf" -e "$d/logs/error.log" >"$tmp/nginx.out" 2>"$tmp/nginx.err" &
  started_pid=$!
  pids+=("$started_pid")
  for _ in $(seq 1 100); do
    (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null && break
    kill -0 "$started_pid" 2>/dev/null || { cat "$tmp/nginx.err" "$d/logs/error.log" >&2; exit 1; }
    sleep 0.05
  done
  started_port="$port"
}
