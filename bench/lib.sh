# bench/lib.sh - sourced by the bench scripts after `set -eu`: tests/strict.sh
# (pipefail, an early exit names its command and line, the SUMMARY promise)
# and the port helpers. Servers bind port 0 and the port is read back from
# the kernel, so two runs never race for a port.
# shellcheck source=../tests/strict.sh
. "$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)/tests/strict.sh"

# bench_port PID: the TCP port PID listens on, once it listens (10 s at most).
bench_port() {
    local pid=$1 port="" _
    for _ in $(seq 100); do
        port=$(ss -ltnpH 2>/dev/null | grep "pid=$pid," | sed -nE 's/.*127\.0\.0\.1:([0-9]+).*/\1/p' | head -n 1) || port=""
        [ -n "$port" ] && { echo "$port"; return 0; }
        kill -0 "$pid" 2>/dev/null || { echo "bench: process $pid exited before it listened" >&2; return 1; }
        sleep 0.1
    done
    echo "bench: process $pid did not listen within 10 s" >&2
    return 1
}

# bench_wait_up PORT PID: returns once PORT accepts a connection; fails when
# PID dies first or 10 s pass.
bench_wait_up() {
    local port=$1 pid=$2 _
    for _ in $(seq 100); do
        if (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null; then return 0; fi
        kill -0 "$pid" 2>/dev/null || { echo "bench: process $pid exited before port $port accepted" >&2; return 1; }
        sleep 0.1
    done
    echo "bench: port $port accepted no connection within 10 s" >&2
    return 1
}
