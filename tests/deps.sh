#!/usr/bin/env bash
# Installs the Debian packages skill-mcp needs: `build` for the server,
# `test` for the whole test suite. As root it runs apt-get; otherwise it
# prints the exact command and stops.
set -eu
. "$(dirname "$0")/strict.sh"
what=${1:-build}
pkgs=(gcc make pkg-config libmicrohttpd-dev libjansson-dev libyaml-dev libuv1-dev
      libpcre2-dev libssl-dev libarchive-dev libhiredis-dev libcurl4-openssl-dev libjose-dev)
if [ "$what" = test ]; then
    pkgs+=(python3 curl git ca-certificates clang libclang-rt-14-dev wrk iproute2 openssl util-linux bubblewrap valgrind nginx haproxy systemd redis-server chromium-headless-shell groff-base man-db)
fi
missing=()
for p in "${pkgs[@]}"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
# The machine may carry its own node/npm; Debian's are the fallback.
if [ "$what" = test ] && ! command -v npm >/dev/null 2>&1; then
    missing+=(nodejs npm)
fi
[ ${#missing[@]} -eq 0 ] && exit 0
cmd="apt-get update && apt-get install -y --no-install-recommends ${missing[*]}"
if [ "$(id -u)" -ne 0 ]; then
    echo "skill-mcp needs these Debian packages: ${missing[*]}" >&2
    echo "Run as root:  $cmd" >&2
    exit 1
fi
echo "installing: ${missing[*]}" >&2
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq
apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
