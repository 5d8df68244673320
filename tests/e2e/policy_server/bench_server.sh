# Sourced by the policy benchmarks (policy_server/bench.sh, policy_agent/bench.sh): starts
# `govern serve policy` ($GOVERN) with its private PostgreSQL under $work/s on a free port, with an acme
# publish key and fetch key. Sets sport, spid, pub, fetch; g runs govern on that data directory. The
# caller kills $spid when done (the server stops the cluster it started).
sport="$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')"
g() { "$GOVERN" --data-dir "$work/s" "$@"; }
pub="$(g policy-server keys create --org acme --scope publish 2>/dev/null)"
fetch="$(g policy-server keys create --org acme --scope fetch 2>/dev/null)"
"$GOVERN" --data-dir "$work/s" serve policy --set policy.server.listen=127.0.0.1:$sport --log-level warn >"$work/s.out" 2>&1 & spid=$!
until grep -q "is up" "$work/s.out"; do sleep 0.1; done
