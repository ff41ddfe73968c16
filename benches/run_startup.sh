#!/usr/bin/env bash
# Start-up time and memory of `lancet run` (issue 6: `lancet run --help`
# start-up under 20 ms; idle memory under 30 MB).
#
#   benches/run_startup.sh            # builds target/release/lancet if missing
#   LANCET=path/to/lancet benches/run_startup.sh
#
# 1. Start-up: `lancet run --help`, with hyperfine when installed (5 warm-up
#    runs, no shell), else the mean of 100 runs timed with `date +%s%N`.
# 2. Peak RSS of `lancet run --help` (/usr/bin/time -v, else python3's
#    getrusage of the child).
# 3. Idle memory: `lancet run` with a task, against a local server that
#    accepts the connection and never answers; after 1 s, VmRSS and VmHWM
#    from /proc/PID/status, then the run is killed.
#
# The machine's load average is printed first: the figures mean little on a
# busy machine.
set -euo pipefail

cd "$(dirname "$0")/.."
LANCET=${LANCET:-target/release/lancet}
if [[ ! -x $LANCET ]]; then
    cargo build --release --bin lancet
fi
echo "binary: $LANCET ($(stat -c %s "$LANCET") bytes, built $(stat -c %y "$LANCET" | cut -d. -f1))"
echo "load: $(cut -d' ' -f1-3 /proc/loadavg) on $(nproc) cores"

tmp=$(mktemp -d)
server_pid=
run_pid=
cleanup() {
    [[ -n $run_pid ]] && kill "$run_pid" 2>/dev/null || true
    [[ -n $server_pid ]] && kill "$server_pid" 2>/dev/null || true
    rm -rf "$tmp"
}
trap cleanup EXIT
# No user configuration, no keys, no colour: the same run everywhere.
export XDG_CONFIG_HOME=$tmp/config NO_COLOR=1
unset OPENAI_API_KEY OPENAI_BASE_URL ANTHROPIC_API_KEY ANTHROPIC_BASE_URL LANCET_MODEL

echo
echo "== start-up: lancet run --help"
if command -v hyperfine >/dev/null; then
    hyperfine -N --warmup 5 --runs 100 "$LANCET run --help"
else
    for _ in 1 2 3 4 5; do "$LANCET" run --help >/dev/null; done
    start=$(date +%s%N)
    for _ in $(seq 100); do "$LANCET" run --help >/dev/null; done
    end=$(date +%s%N)
    echo "mean over 100 runs: $(( (end - start) / 100 / 1000 )) us (loop overhead included)"
fi

echo
echo "== peak RSS: lancet run --help"
if [[ -x /usr/bin/time ]]; then
    kb=$(/usr/bin/time -v "$LANCET" run --help 2>&1 >/dev/null | awk -F': ' '/Maximum resident set size/ {print $2}')
else
    kb=$(python3 -c 'import resource, subprocess, sys
subprocess.run(sys.argv[1:], stdout=subprocess.DEVNULL, check=True)
print(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss)' "$LANCET" run --help)
fi
echo "max RSS: $kb kB ($(awk "BEGIN {printf \"%.1f\", $kb / 1024}") MB)"

echo
echo "== idle: lancet run waiting on a server that never answers"
# Accepts every connection, reads nothing, answers nothing; prints its port.
python3 -u -c 'import socket, time
s = socket.socket()
s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
s.bind(("127.0.0.1", 0))
s.listen(8)
print(s.getsockname()[1], flush=True)
held = []
while True:
    c, _ = s.accept()
    held.append(c)' >"$tmp/port" &
server_pid=$!
for _ in $(seq 50); do [[ -s $tmp/port ]] && break; sleep 0.1; done
port=$(head -n1 "$tmp/port")
mkdir -p "$tmp/root"
echo "print('hello')" >"$tmp/root/hello.py"
"$LANCET" run -C "$tmp/root" --base-url "http://127.0.0.1:$port/v1" -m gpt-4o \
    "say hello" </dev/null >"$tmp/run.out" 2>"$tmp/run.err" &
run_pid=$!
sleep 1
if ! kill -0 "$run_pid" 2>/dev/null; then
    echo "lancet run exited before the measurement:"
    cat "$tmp/run.out" "$tmp/run.err"
    exit 1
fi
grep -E '^(VmRSS|VmHWM|Threads)' "/proc/$run_pid/status"
rss=$(awk '/^VmRSS/ {print $2}' "/proc/$run_pid/status")
hwm=$(awk '/^VmHWM/ {print $2}' "/proc/$run_pid/status")
echo "idle RSS: $(awk "BEGIN {printf \"%.1f\", $rss / 1024}") MB (peak $(awk "BEGIN {printf \"%.1f\", $hwm / 1024}") MB)"
kill "$run_pid" 2>/dev/null || true
wait "$run_pid" 2>/dev/null || true
run_pid=
