#!/usr/bin/env bash
# Sub-agents bench (issue 14): the wall time of `lancet run` when the model
# delegates two searches in one reply, with the two children running at once
# (`[task] parallel = 4`, the default) and one after the other
# (`parallel = 1`). The model is a loopback server (Python, below) that holds
# every reply for DELAY seconds and answers by conversation: the parent calls
# `task` twice, then answers; each child calls grep once, then answers. So
# the parent makes 2 requests and each child 2: at 0.2 s a reply, about
# 0.8 s with the children together (0.2 + 0.4 + 0.2) and 1.2 s one after the
# other (0.2 + 0.8 + 0.2), plus lancet's own time.
#
# Usage: benches/subagents.sh [runs] [delay]   (default: 5 runs, 0.2 s)
#
# Needs cargo and python3. Prints each run's seconds and the median per mode.
# LANCET=path/to/lancet times that binary instead of building a release one.
set -euo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
runs=${1:-5}
delay=${2:-0.2}
target=${CARGO_TARGET_DIR:-$root/target}
lancet=${LANCET:-$target/release/lancet}

if [ -z "${LANCET:-}" ]; then
    echo "building lancet (release)..." >&2
    cargo build --release --quiet --manifest-path "$root/Cargo.toml" --bin lancet
fi

work=$(mktemp -d)
server_pid=
cleanup() {
    if [ -n "$server_pid" ]; then kill "$server_pid" 2>/dev/null || true; fi
    rm -rf "$work"
}
trap cleanup EXIT

cat > "$work/server.py" <<'PY'
import json, sys, time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

DELAY = float(sys.argv[1])

def chunk(delta, finish=None):
    return "data: " + json.dumps({"id": "x", "object": "chat.completion.chunk", "created": 0, "model": "m",
                                  "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]}) + "\n\n"

USAGE = "data: " + json.dumps({"id": "x", "object": "chat.completion.chunk", "created": 0, "model": "m", "choices": [],
                               "usage": {"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15}}) + "\n\n"

class Model(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, *args):
        pass

    def do_POST(self):
        body = json.loads(self.rfile.read(int(self.headers["content-length"])))
        messages = body["messages"]
        first = next(m for m in messages if m["role"] == "user")["content"]
        if isinstance(first, list):
            first = "".join(b.get("text", "") for b in first)
        turn = sum(1 for m in messages if m["role"] == "assistant")
        calls, text = [], ""
        if "KEY-" in first:  # a child
            if turn == 0:
                calls = [("g", "grep", json.dumps({"pattern": "def"}))]
            else:
                text = "found it"
        elif turn == 0:  # the parent
            calls = [("c1", "task", json.dumps({"description": "a", "prompt": "KEY-A search"})),
                     ("c2", "task", json.dumps({"description": "b", "prompt": "KEY-B search"}))]
        else:
            text = "done"
        time.sleep(DELAY)
        out = [chunk({"role": "assistant", "content": ""})]
        if text:
            out.append(chunk({"content": text}))
        for i, (cid, name, args) in enumerate(calls):
            out.append(chunk({"tool_calls": [{"index": i, "id": cid, "type": "function",
                                              "function": {"name": name, "arguments": args}}]}))
        out += [chunk({}, "tool_calls" if calls else "stop"), USAGE, "data: [DONE]\n\n"]
        data = "".join(out).encode()
        self.send_response(200)
        self.send_header("content-type", "text/event-stream")
        self.send_header("connection", "close")
        self.end_headers()
        self.wfile.write(data)
        self.close_connection = True

server = ThreadingHTTPServer(("127.0.0.1", 0), Model)
print(server.server_address[1], flush=True)
server.serve_forever()
PY

python3 "$work/server.py" "$delay" > "$work/port" &
server_pid=$!
for _ in $(seq 100); do [ -s "$work/port" ] && break; sleep 0.05; done
port=$(head -1 "$work/port")

mkdir -p "$work/root"
echo 'def a(): pass' > "$work/root/a.py"
export XDG_CONFIG_HOME=$work/config
unset OPENAI_API_KEY LANCET_MODEL

for parallel in 4 1; do
    printf '[task]\nparallel = %s\n' "$parallel" > "$work/root/.lancet.toml"
    times=()
    for i in $(seq "$runs"); do
        start=$(date +%s.%N)
        "$lancet" run -C "$work/root" --base-url "http://127.0.0.1:$port/v1" -m gpt-4o --yes --json go > /dev/null
        end=$(date +%s.%N)
        t=$(echo "$end - $start" | bc)
        times+=("$t")
        echo "parallel=$parallel run $i: ${t} s"
    done
    median=$(printf '%s\n' "${times[@]}" | sort -n | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}')
    echo "parallel=$parallel median: ${median} s (reply delay ${delay} s)"
done
