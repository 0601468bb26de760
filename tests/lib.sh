# shellcheck shell=bash
# tests/lib.sh - sourced by the test runner scripts (run-e2e.sh,
# run-conformance.sh, deb-check.sh, deploy-check.sh) for the set-up they
# share. Defines functions only; sets no shell options.

# abs_path PATH: PATH, made absolute against the current directory.
abs_path() {
    case "$1" in /*) printf '%s\n' "$1" ;; *) printf '%s\n' "$PWD/$1" ;; esac
}

# binary_arg WHO ARGS...: the one argument of a runner, the server binary,
# printed as an absolute path. Returns 2 (usage) unless there is exactly one
# argument, 1 when it is not an executable; the message names WHO.
binary_arg() {
    local who=$1 bin
    shift
    if [ $# -ne 1 ]; then
        echo "usage: $who BINARY" >&2
        return 2
    fi
    bin="$(abs_path "$1")"
    if [ ! -x "$bin" ]; then
        echo "$who: $bin is not an executable (run make first)" >&2
        return 1
    fi
    printf '%s\n' "$bin"
}

# npm_ready WHO DIR PACKAGE: DIR/node_modules holds PACKAGE and is in step
# with DIR/package-lock.json, after an `npm ci` when it was not. Returns 1
# (with a message naming WHO) when npm ci fails.
npm_ready() {
    local who=$1 dir=$2 pkg=$3 stamp="$2/node_modules/.package-lock.json"
    if [ -d "$dir/node_modules/$pkg" ] && [ -f "$stamp" ] && ! [ "$dir/package-lock.json" -nt "$stamp" ]; then
        return 0
    fi
    echo "$who: npm ci in ${dir#"${repo:-}"/}" >&2
    if ! (cd "$dir" && npm ci --no-audit --no-fund >&2); then
        echo "$who: npm ci failed" >&2
        return 1
    fi
}

# logged_port LOG PID: the port of the first "listening on
# http://127.0.0.1:PORT" line of LOG, waited for up to 10 s while PID
# lives; empty when there is none.
logged_port() {
    local log=$1 pid=$2 port="" _
    for _ in $(seq 1 100); do
        port="$(sed -n 's#.*listening on http://127\.0\.0\.1:\([0-9][0-9]*\).*#\1#p' "$log" | head -n 1)"
        [ -n "$port" ] && break
        kill -0 "$pid" 2>/dev/null || break
        sleep 0.1
    done
    printf '%s\n' "$port"
}
