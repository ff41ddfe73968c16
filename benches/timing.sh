# Shared by the process benches (sourced, not run): timing without hyperfine.

# Microseconds since the epoch; EPOCHREALTIME (bash 5) is read without
# starting a process.
now_us() {
    if [[ -n ${EPOCHREALTIME:-} ]]; then
        local t=${EPOCHREALTIME/[.,]/}
        echo "$t"
    else
        echo $(($(date +%s%N) / 1000))
    fi
}

# time_runs DIR RUNS CMD...: runs CMD 3 times to warm up, then RUNS timed
# times, each after `sh DIR/restore`; prints each run's microseconds, sorted.
time_runs() {
    local d=$1 n=$2 i t0 t1
    shift 2
    for ((i = 0; i < 3; i++)); do
        sh "$d/restore"
        "$@" >/dev/null 2>&1
    done
    for ((i = 0; i < n; i++)); do
        sh "$d/restore"
        t0=$(now_us)
        "$@" >/dev/null 2>&1
        t1=$(now_us)
        echo $((t1 - t0))
    done | sort -n
}
