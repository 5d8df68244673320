# Programs the e2e scripts start that print "listening HOST:PORT" once serving (gateway_proxy, the model
# stub): started in the background with their output in $work, their pids kept in the array $pids.
# The caller sets work (a temporary directory) and pids=() before calling these.

# start NAME CMD...: runs CMD with stdout and stderr in $work/NAME.out and $work/NAME.err, waits up to
# 5 s for its "listening" line and sets started_pid and started_port. A program that exits first, or
# prints no port, ends the script (exit 1) with its stderr shown. Call it directly, not in a
# subshell ($(...)), so that $pids keeps every pid for stop_started.
start() {
  local name="$1"; shift
  # Emptied before the start, not by the background job's redirection: a NAME started again would
  # otherwise be read with the previous run's "listening" line until the child got to it.
  : >"$work/$name.out"
  "$@" >"$work/$name.out" 2>"$work/$name.err" &
  local pid=$!
  pids+=("$pid")
  for _ in $(seq 1 100); do
    grep -q '^listening ' "$work/$name.out" 2>/dev/null && break
    kill -0 "$pid" 2>/dev/null || { echo "$name exited at start" >&2; cat "$work/$name.err" >&2; exit 1; }
    sleep 0.05
  done
  started_pid="$pid"
  started_port="$(sed -n 's/^listening .*:\([0-9]*\)$/\1/p' "$work/$name.out")"
  [ -n "$started_port" ] || { echo "$name did not start" >&2; cat "$work/$name.err" >&2; exit 1; }
}

# Stops every program started here (for the caller's EXIT trap).
stop_started() {
  for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; wait "$p" 2>/dev/null || true; done
}
