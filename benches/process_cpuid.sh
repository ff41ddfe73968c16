#!/usr/bin/env bash
# Counts the CPUID instructions one process executes, per object (the
# program, libgcc_s, libc, ld.so) and per call stack. In a virtual machine
# each CPUID traps to the hypervisor (15-40 us apiece measured here), so a
# short process like `lancet apply` pays for every one it runs.
#
# Usage: benches/process_cpuid.sh PROGRAM [ARGS...]
#   e.g. benches/process_cpuid.sh target/release/lancet apply -p1 -C tree edit.diff
#        benches/process_cpuid.sh /usr/bin/patch --version
#
# How: objdump finds every `cpuid` in those objects; gdb stops at each one
# (breakpoints set as each object is mapped) and records the backtrace.
# Needs gdb (with Python), objdump and python3. Slow (seconds), exact.
set -euo pipefail

if (($# < 1)); then
    echo "usage: $0 PROGRAM [ARGS...]" >&2
    exit 2
fi
prog=$(command -v "$1")
script=$(mktemp --suffix=.py)
trap 'rm -f "$script"' EXIT
cat >"$script" <<'EOF'
import collections, os, re, subprocess
import gdb

def cpuids(path):
    out = subprocess.run(["objdump", "-d", "--no-show-raw-insn", path],
                         capture_output=True, text=True).stdout
    return [int(m.group(1), 16) for m in re.finditer(r"^\s*([0-9a-f]+):\s+cpuid", out, re.M)]

objects = {}
for name in [os.environ["CPUID_PROG"], "libgcc_s.so.1", "libc.so.6", "ld-linux-x86-64.so.2"]:
    for d in ["", "/lib/x86_64-linux-gnu/", "/usr/lib/x86_64-linux-gnu/", "/lib64/"]:
        p = os.path.realpath(d + name)
        if os.path.isfile(p):
            objects[p] = cpuids(p)
            break

gdb.execute("set pagination off")
gdb.execute("set confirm off")
gdb.execute("set stop-on-solib-events 1")
gdb.execute("starti", to_string=True)
mapped, where = set(), {}

def add_breakpoints():
    for line in gdb.execute("info proc mappings", to_string=True).splitlines():
        f = line.split()
        if len(f) < 5 or not f[-1].startswith("/"):
            continue
        path = os.path.realpath(f[-1])
        if path in objects and path not in mapped and int(f[3], 16) == 0:
            mapped.add(path)
            base = int(f[0], 16)
            for off in objects[path]:
                gdb.execute(f"break *{base + off:#x}", to_string=True)
                where[base + off] = os.path.basename(path)

add_breakpoints()
per_object, stacks = collections.Counter(), collections.Counter()
while True:
    try:
        gdb.execute("continue", to_string=True)
        pc = int(gdb.parse_and_eval("$pc"))
    except gdb.error:
        break
    if pc not in where:
        add_breakpoints()
        continue
    per_object[where[pc]] += 1
    frames = []
    for line in gdb.execute("bt 8", to_string=True).splitlines():
        if line.startswith("#"):
            frames.append(re.sub(r"^#\d+\s+(0x[0-9a-f]+ in )?", "", line).split(" (")[0])
    stacks[" <- ".join(frames[:6])] += 1
print(f"CPUID instructions executed: {sum(per_object.values())}")
for name, n in per_object.most_common():
    print(f"  {n:4d}  {name}")
print("by call stack:")
for stack, n in stacks.most_common():
    print(f"  {n:4d}  {stack[:200]}")
EOF
CPUID_PROG=$prog gdb -q -batch -x "$script" --args "$prog" "${@:2}" 2>/dev/null |
    sed -n '/^CPUID instructions executed/,$p'
