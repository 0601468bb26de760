#!/usr/bin/env bash
# tests/deb-check.sh [BINARY] - the .deb end to end: build it from BINARY
# (packaging/build-deb.sh), dpkg -i, check its files, conffile, Depends and
# system user, start the installed binary with the installed config (as
# that user, on a free loopback port) and call list_skills through curl,
# then dpkg --purge and check that nothing of it is left.
#
# Needs root (CI runs as root). Leaves the machine as it found it: it
# refuses, before touching anything, when the package, the skill-mcp user
# or its paths are already there.
# Last line, always: "SUMMARY deb: N passed, N failed".
set -uo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
repo="$(cd "$here/.." && pwd)"
. "$here/lib.sh"
bin="$(abs_path "${1:-$repo/build/skill-mcp}")"

pass=0; failed=0
ok()   { pass=$((pass + 1)); echo "ok   $1"; }
bad()  { failed=$((failed + 1)); echo "FAIL $1"; [ -n "${2:-}" ] && sed 's/^/       /' <<<"$2"; }
finish() { echo "SUMMARY deb: $pass passed, $failed failed"; [ "$failed" -eq 0 ]; exit $?; }

[ -x "$bin" ] || { bad "skill-mcp binary $bin (run make first)"; finish; }
[ "$(id -u)" -eq 0 ] || { bad "deb-check needs root (dpkg -i); run it as root"; finish; }
for t in dpkg-deb dpkg curl setpriv; do
    command -v $t >/dev/null || { bad "$t missing"; finish; }
done

# ---- refuse to touch a machine that has any of it -----------------------------
present=""
st="$(dpkg-query -W -f='${db:Status-Status}' skill-mcp 2>/dev/null)"
[ -n "$st" ] && [ "$st" != not-installed ] && present="$present [package skill-mcp: $st]"
getent passwd skill-mcp >/dev/null && present="$present [user skill-mcp]"
getent group skill-mcp >/dev/null && present="$present [group skill-mcp]"
for p in /etc/skill-mcp /srv/skill-mcp /usr/bin/skill-mcp /lib/systemd/system/skill-mcp.service; do
    [ -e "$p" ] && present="$present [$p]"
done
if [ -n "$present" ]; then
    bad "this machine already has skill-mcp:$present; not installing over it (remove it first, or run elsewhere)"
    finish
fi
ok "machine has no skill-mcp package, user or paths"

tmp="$(mktemp -d "${TMPDIR:-/tmp}/skill-mcp-deb-check.XXXXXX")"
installed=0; spid=""
cleanup() {
    [ -n "$spid" ] && kill -TERM "$spid" 2>/dev/null && wait "$spid" 2>/dev/null
    [ "$installed" = 1 ] && { rm -rf /srv/skill-mcp/skills/deb-check-*; dpkg --purge skill-mcp >/dev/null 2>&1; }
    rm -rf "$tmp"
}
trap cleanup EXIT

# ---- build ----------------------------------------------------------------------
if ! out="$("$repo/packaging/build-deb.sh" "$bin" "$tmp" 2>&1)"; then
    bad "packaging/build-deb.sh" "$out"; finish
fi
deb="$(tail -n 1 <<<"$out")"
[ -f "$deb" ] && ok "built $(basename "$deb")" || { bad "no .deb built" "$out"; finish; }
dep="$(dpkg-deb -f "$deb" Depends)"
missing=""
for lib in libmicrohttpd12 libjansson4 libyaml-0-2 libuv1 libpcre2-8-0 libssl3 libarchive13 \
           libhiredis libcurl libjose0 libc6; do
    grep -q "$lib" <<<"$dep" || missing="$missing $lib"
done
[ -z "$missing" ] && ok "Depends names every runtime library" || bad "Depends lacks:$missing" "$dep"
[ "$(dpkg-deb -I "$deb" conffiles 2>/dev/null)" = /etc/skill-mcp/config.yaml ] &&
    ok "conffiles: /etc/skill-mcp/config.yaml" || bad "conffiles" "$(dpkg-deb -I "$deb" conffiles 2>&1)"

# ---- install ---------------------------------------------------------------------
# An admin who made the group first (to let others read the config) must
# not make the install fail: the user joins that group.
groupadd --system skill-mcp
installed=1
if out="$(dpkg -i "$deb" 2>&1)"; then ok "dpkg -i (group skill-mcp made beforehand)"; else bad "dpkg -i" "$out"; finish; fi
[ "$(id -gn skill-mcp 2>/dev/null)" = skill-mcp ] && ok "user skill-mcp's group is the existing skill-mcp" ||
    bad "user skill-mcp's group" "$(id skill-mcp 2>&1)"
# A reinstall (and so an upgrade) runs postinst again over the same user.
if out="$(dpkg -i "$deb" 2>&1)"; then ok "dpkg -i again (reinstall)"; else bad "dpkg -i again" "$out"; fi
[ "$(dpkg-query -W -f='${db:Status-Status}' skill-mcp)" = installed ] && ok "dpkg: installed" ||
    bad "dpkg status $(dpkg-query -W -f='${db:Status-Status}' skill-mcp)"
for f in /usr/bin/skill-mcp /usr/share/man/man1/skill-mcp.1.gz /lib/systemd/system/skill-mcp.service \
         /etc/skill-mcp/config.yaml; do
    [ -f "$f" ] || missing="$missing $f"
done
[ -d /srv/skill-mcp/skills ] || missing="$missing /srv/skill-mcp/skills/"
[ -z "$missing" ] && ok "files in place" || bad "missing:$missing"
grep -qxF 'ExecStart=/usr/bin/skill-mcp --config /etc/skill-mcp/config.yaml' \
    /lib/systemd/system/skill-mcp.service && ok "unit runs /usr/bin/skill-mcp --config /etc/skill-mcp/config.yaml" ||
    bad "unit ExecStart" "$(grep ExecStart /lib/systemd/system/skill-mcp.service)"
u="$(getent passwd skill-mcp)"
if [ -n "$u" ] && [ "$(cut -d: -f7 <<<"$u")" = /usr/sbin/nologin ] && [ "$(cut -d: -f3 <<<"$u")" -lt 1000 ]; then
    ok "system user skill-mcp (uid $(cut -d: -f3 <<<"$u"), nologin)"
else bad "system user skill-mcp" "$u"; fi
perm="$(stat -c '%a %U:%G' /etc/skill-mcp/config.yaml)"
[ "$perm" = "640 root:skill-mcp" ] && ok "config.yaml $perm" || bad "config.yaml is $perm, want 640 root:skill-mcp"
w="$(MANWIDTH=100 LC_ALL=C man -l /usr/share/man/man1/skill-mcp.1.gz 2>&1 >/dev/null)"
[ -z "$w" ] && ok "man -l renders the installed page without warnings" || bad "man -l" "$w"

# ---- serve ---------------------------------------------------------------------------
# One bundled skill in the installed root; the installed config, with only
# the port moved (the command line wins over the file).
cp -R /usr/share/skill-mcp/skills/api-call /srv/skill-mcp/skills/deb-check-api-call
sed -i 's/^name: api-call$/name: deb-check-api-call/' /srv/skill-mcp/skills/deb-check-api-call/SKILL.md
setpriv --reuid=skill-mcp --regid=skill-mcp --init-groups /usr/bin/skill-mcp --config /etc/skill-mcp/config.yaml --port 0 \
    --log-format text >"$tmp/serve.log" 2>&1 &
spid=$!
port="$(logged_port "$tmp/serve.log" "$spid")"
if [ -z "$port" ]; then
    bad "the installed binary did not start with the installed config" "$(cat "$tmp/serve.log")"
else
    grep -q '(2 worker(s)' "$tmp/serve.log" && ok "serves with the installed config (2 workers, port $port)" ||
        bad "config not applied" "$(cat "$tmp/serve.log")"
    resp=""
    for _ in $(seq 1 50); do
        resp="$(curl -s -X POST "http://127.0.0.1:$port/mcp" -H 'Content-Type: application/json' \
            -H 'Accept: application/json, text/event-stream' \
            -d '{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"list_skills","arguments":{}}}')"
        grep -q 'deb-check-api-call' <<<"$resp" && break
        sleep 0.1
    done
    grep -q 'deb-check-api-call' <<<"$resp" && ok "list_skills through curl lists the installed root's skill" ||
        bad "list_skills" "$resp"
    kill -TERM "$spid"; wait "$spid"; rc=$?; spid=""
    [ $rc -eq 0 ] && ok "SIGTERM: clean stop" || bad "stop exit $rc" "$(tail -5 "$tmp/serve.log")"
fi
rm -rf /srv/skill-mcp/skills/deb-check-api-call

# ---- purge ---------------------------------------------------------------------------
if out="$(dpkg --purge skill-mcp 2>&1)"; then ok "dpkg --purge"; installed=0; else bad "dpkg --purge" "$out"; fi
left=""
st="$(dpkg-query -W -f='${db:Status-Status}' skill-mcp 2>/dev/null)"
[ -n "$st" ] && [ "$st" != not-installed ] && left="$left [package: $st]"
getent passwd skill-mcp >/dev/null && left="$left [user]"
getent group skill-mcp >/dev/null && left="$left [group]"
for p in /etc/skill-mcp /srv/skill-mcp /usr/bin/skill-mcp /lib/systemd/system/skill-mcp.service \
         /usr/share/man/man1/skill-mcp.1.gz /usr/share/skill-mcp /usr/share/doc/skill-mcp; do
    [ -e "$p" ] && left="$left [$p]"
done
[ -z "$left" ] && ok "purged: no package, user, group or file left" || bad "left after purge:$left"
finish
