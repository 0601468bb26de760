#!/usr/bin/env bash
# tests/deploy-check.sh [BINARY] - offline checks of the deployment files in
# deploy/ (docs/deploy.md#deployment-files). Nothing here needs systemd as
# PID 1, a Docker engine or a Kubernetes cluster:
#
#   systemd  systemd-analyze verify (as shipped, and with ExecStart pointed at
#            BINARY), systemd-analyze security --offline, required directives
#   nginx    nginx -t on the file included in a throw-away config and prefix
#   haproxy  haproxy -c
#   docker   instruction order and stages, apt packages exist in Debian
#            (apt-cache show), the build stage's COPY + make run here
#   k8s      YAML parse (npm `yaml`), schema validation (npm
#            `kubernetes-models`), cross-references between the manifests,
#            and the ConfigMap's example skill loads in BINARY
#   flags    every skill-mcp flag used in deploy/ is one BINARY knows
#
# BINARY defaults to build/skill-mcp. The npm packages are installed once into
# build/deploy-check-npm (DEPLOY_CHECK_NPM overrides).
# Last line, always: "SUMMARY deploy: N passed, N failed".
set -uo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
repo="$(cd "$here/.." && pwd)"
dep="$repo/deploy"
. "$here/lib.sh"
bin="$(abs_path "${1:-$repo/build/skill-mcp}")"

pass=0; failed=0
ok()   { pass=$((pass + 1)); echo "ok   $1"; }
bad()  { failed=$((failed + 1)); echo "FAIL $1"; [ -n "${2:-}" ] && sed 's/^/       /' <<<"$2"; }
finish() { echo "SUMMARY deploy: $pass passed, $failed failed"; [ "$failed" -eq 0 ]; exit $?; }

tmp="$(mktemp -d "${TMPDIR:-/tmp}/skill-mcp-deploy.XXXXXX")"
trap 'rm -rf "$tmp"' EXIT

if [ ! -x "$bin" ]; then
    bad "skill-mcp binary $bin (run make first)"
    finish
fi

# ---- systemd -----------------------------------------------------------------
unit="$dep/systemd/skill-mcp.service"
if ! command -v systemd-analyze >/dev/null; then
    bad "systemd-analyze missing (tests/deps.sh test installs systemd)"
else
    # As shipped: the only complaint allowed is the absent /usr/local/bin/skill-mcp.
    out="$(cd "$tmp" && systemd-analyze verify --man=no "$unit" 2>&1)"
    rest="$(grep -v 'Command /usr/local/bin/skill-mcp is not executable' <<<"$out" | grep -v '^$')"
    if [ -z "$rest" ]; then ok "systemd: verify (as shipped; ExecStart binary absence tolerated)"
    else bad "systemd: verify (as shipped)" "$out"; fi
    # With ExecStart at a binary that exists, verify must be silent and succeed.
    sed "s#/usr/local/bin/skill-mcp#$bin#" "$unit" >"$tmp/skill-mcp.service"
    out="$(cd "$tmp" && systemd-analyze verify --man=no "$tmp/skill-mcp.service" 2>&1)"; rc=$?
    if [ $rc -eq 0 ] && [ -z "$out" ]; then ok "systemd: verify (ExecStart at $bin) clean"
    else bad "systemd: verify (ExecStart at $bin) rc=$rc" "$out"; fi
    out="$(systemd-analyze security --offline=yes "$unit" 2>&1)"
    score="$(sed -n 's/.*Overall exposure level for skill-mcp.service: \([0-9.]*\).*/\1/p' <<<"$out")"
    if [ -n "$score" ] && awk -v s="$score" 'BEGIN{exit !(s <= 2.5)}'; then
        ok "systemd: security --offline exposure $score (<= 2.5)"
    else bad "systemd: security --offline exposure '${score:-?}' (want <= 2.5)" "$(tail -3 <<<"$out")"; fi
fi
conf="$dep/systemd/config.yaml"
missing=""
for d in Type=notify User=skill-mcp DynamicUser=yes ProtectSystem=strict ProtectHome=yes PrivateTmp=yes NoNewPrivileges=yes \
         'RestrictAddressFamilies=AF_INET AF_INET6 AF_UNIX' LockPersonality=yes \
         SystemCallArchitectures=native ReadOnlyPaths=/srv/skill-mcp/skills KillMode=mixed \
         'ExecReload=/bin/kill -HUP $MAINPID' Restart=on-failure; do
    grep -qxF "$d" "$unit" || missing="$missing [$d]"
done
grep -qxF 'ExecStart=/usr/local/bin/skill-mcp --config /etc/skill-mcp/config.yaml' "$unit" ||
    missing="$missing [ExecStart with --config /etc/skill-mcp/config.yaml]"
grep -qE '^WatchdogSec=[1-9][0-9]*$' "$unit" || missing="$missing [WatchdogSec=]"
grep -qE '^workers: [2-9]' "$conf" || missing="$missing [workers: in config.yaml]"
grep -q '^MemoryDenyWriteExecute=yes' "$unit" && missing="$missing [MemoryDenyWriteExecute must stay off: node JIT]"
if [ -z "$missing" ]; then ok "systemd: hardening directives present"; else bad "systemd: directives$missing"; fi
stop="$(sed -n 's/^TimeoutStopSec=\([0-9]*\)$/\1/p' "$unit")"
grace="$(sed -n 's/^shutdown-timeout: *\([0-9]*\).*/\1/p' "$conf")"
if [ -n "$stop" ] && [ -n "$grace" ] && [ "$stop" -gt $((grace + 5)) ]; then
    ok "systemd: TimeoutStopSec=$stop > shutdown-timeout $grace + 5"
else bad "systemd: TimeoutStopSec '$stop' must exceed shutdown-timeout '$grace' (config.yaml) + 5"; fi
# The unit's config file loads: the binary starts on it (port and skills
# moved to this machine's) and answers /readyz.
sed -e "s#^port: .*#port: 0#" -e "s#^skills: .*#skills: [$repo/skills]#" "$conf" >"$tmp/config.yaml"
"$bin" --config "$tmp/config.yaml" --log-format text 2>"$tmp/conf.log" &
cpid=$!
cport="$(logged_port "$tmp/conf.log" "$cpid")"
if [ -n "$cport" ] && [ "$(curl -s -o /dev/null -w '%{http_code}' "http://127.0.0.1:$cport/readyz")" = 200 ] &&
   grep -q '(2 worker(s) x 8 threads' "$tmp/conf.log"; then
    ok "systemd: skill-mcp serves with deploy/systemd/config.yaml (2 workers x 8 threads)"
else bad "systemd: skill-mcp with deploy/systemd/config.yaml" "$(cat "$tmp/conf.log")"; fi
kill -TERM $cpid 2>/dev/null; wait $cpid 2>/dev/null
# The full example in docs/deploy.md is this file, word for word.
doc="$(awk '/^## Configuration file/{s=1} s&&/^```yaml/{f=1;next} f&&/^```/{exit} f' "$repo/docs/deploy.md")"
if [ "$doc" = "$(cat "$conf")" ]; then ok "systemd: docs/deploy.md's example is deploy/systemd/config.yaml"
else bad "systemd: docs/deploy.md's config example differs from deploy/systemd/config.yaml" \
    "$(diff <(echo "$doc") "$conf")"; fi

# ---- nginx -------------------------------------------------------------------
ngx="$dep/nginx/skill-mcp.conf"
if [ ! -x /usr/sbin/nginx ]; then
    bad "nginx missing (tests/deps.sh test installs nginx)"
else
    p="$tmp/nginx"; mkdir -p "$p/logs"
    cat >"$p/nginx.conf" <<EOF
pid $p/nginx.pid;
error_log $p/logs/error.log;
events { worker_connections 64; }
http {
    access_log off;
    client_body_temp_path $p/client_body;
    proxy_temp_path $p/proxy;
    fastcgi_temp_path $p/fastcgi;
    uwsgi_temp_path $p/uwsgi;
    scgi_temp_path $p/scgi;
    include $ngx;
}
EOF
    out="$(/usr/sbin/nginx -t -q -e "$p/logs/error.log" -p "$p" -c "$p/nginx.conf" 2>&1)"; rc=$?
    if [ $rc -eq 0 ]; then ok "nginx: nginx -t"; else bad "nginx: nginx -t" "$out$(cat "$p/logs/error.log" 2>/dev/null)"; fi
    # The commented --stateful affinity line must be valid once enabled.
    sed 's/^\(\s*\)# \(hash \$binary_remote_addr consistent;\)/\1\2/' "$ngx" >"$p/stateful.conf"
    if ! grep -qE '^\s*hash \$binary_remote_addr consistent;' "$p/stateful.conf"; then
        bad "nginx: no commented 'hash \$binary_remote_addr consistent;' for --stateful"
    else
        sed -i "s#include $ngx;#include $p/stateful.conf;#" "$p/nginx.conf"
        out="$(/usr/sbin/nginx -t -q -e "$p/logs/error.log" -p "$p" -c "$p/nginx.conf" 2>&1)"; rc=$?
        if [ $rc -eq 0 ]; then ok "nginx: nginx -t with the --stateful affinity enabled"
        else bad "nginx: nginx -t with the --stateful affinity enabled" "$out"; fi
    fi
fi
missing=""
for d in 'proxy_http_version 1.1;' 'proxy_buffering off;' 'proxy_set_header Host localhost;' \
         'proxy_set_header Connection "";' 'max_fails=' 'fail_timeout=' '/readyz' 'proxy_next_upstream error timeout;' \
         'location ^~ /.well-known/ {' 'location = / {'; do
    grep -qF -- "$d" "$ngx" || missing="$missing [$d]"
done
grep -qE '^\s*(ip_hash|sticky|hash )' "$ngx" && missing="$missing [no affinity expected]"
rt="$(sed -n 's/^ *proxy_read_timeout \([0-9]*\)s;/\1/p' "$ngx")"
# The longest call: --max-script-timeout 600 + --script-queue-timeout 30 + 2 hooks x 10.
[ -n "$rt" ] && [ "$rt" -gt 650 ] || missing="$missing [proxy_read_timeout '$rt' must exceed 650 s]"
if [ -z "$missing" ]; then ok "nginx: upstream settings"; else bad "nginx:$missing"; fi

# ---- haproxy -----------------------------------------------------------------
hap="$dep/haproxy/skill-mcp.cfg"
if ! command -v haproxy >/dev/null; then
    bad "haproxy missing (tests/deps.sh test installs haproxy)"
else
    out="$(cd "$tmp" && haproxy -c -f "$hap" 2>&1)"; rc=$?
    if [ $rc -eq 0 ]; then ok "haproxy: haproxy -c"; else bad "haproxy: haproxy -c" "$out"; fi
fi
missing=""
for re in '^\s*option httpchk GET /readyz$' '^\s*http-check expect status 200$' '^\s*balance roundrobin$' \
          '^\s*#\s*stick store-response res\.hdr\(Mcp-Session-Id\)$'; do
    grep -qE "$re" "$hap" || missing="$missing [$re]"
done
grep -qE '^\s*[^#]*shutdown-sessions' "$hap" && missing="$missing [shutdown-sessions would cut draining calls]"
if [ -z "$missing" ]; then ok "haproxy: health check and balancing"; else bad "haproxy:$missing"; fi
if command -v haproxy >/dev/null; then
    # The commented --stateful stick table must be valid once enabled.
    sed 's/^\(\s*\)# \(stick\)/\1\2/' "$hap" >"$tmp/stateful.cfg"
    n="$(grep -cE '^\s*stick' "$tmp/stateful.cfg")"
    out="$(cd "$tmp" && haproxy -c -f "$tmp/stateful.cfg" 2>&1)"; rc=$?
    if [ $rc -eq 0 ] && [ "$n" -eq 3 ]; then ok "haproxy: haproxy -c with the --stateful stick table enabled"
    else bad "haproxy: --stateful stick table (rc=$rc, $n stick lines, want 3)" "$out"; fi
fi

# ---- Dockerfile (not built here: no Docker engine) ---------------------------
df="$dep/docker/Dockerfile"
out="$(node - "$df" "$repo" <<'EOF' 2>&1
const fs = require('fs'); const path = require('path');
const [file, repo] = process.argv.slice(2);
const errs = [];
// Logical lines: comments dropped, backslash continuations joined.
const lines = []; let cur = '';
for (const l of fs.readFileSync(file, 'utf8').split('\n')) {
  if (/^\s*#/.test(l) && cur === '') continue;
  if (/^\s*#/.test(l)) continue;
  if (/\\\s*$/.test(l)) { cur += l.replace(/\\\s*$/, ' '); continue; }
  cur += l; if (cur.trim()) lines.push(cur.trim()); cur = '';
}
const known = ['FROM','RUN','COPY','ADD','ARG','ENV','WORKDIR','USER','EXPOSE','HEALTHCHECK','CMD','ENTRYPOINT','LABEL','VOLUME','STOPSIGNAL','SHELL','ONBUILD'];
const ins = lines.map((l) => { const m = /^(\S+)\s+(.*)$/.exec(l); return { op: m ? m[1].toUpperCase() : l, arg: m ? m[2] : '' }; });
for (const i of ins) if (!known.includes(i.op)) errs.push(`unknown instruction ${i.op}`);
const firstNonArg = ins.find((i) => i.op !== 'ARG');
if (!firstNonArg || firstNonArg.op !== 'FROM') errs.push('the first instruction (after ARGs) must be FROM');
const stages = []; let stage = null; const pkgs = [];
for (const i of ins) {
  if (i.op === 'FROM') {
    const m = /^(\S+)(?:\s+AS\s+(\S+))?$/i.exec(i.arg);
    if (!m) { errs.push(`bad FROM ${i.arg}`); continue; }
    if (!/^debian:12(-slim)?$/.test(m[1])) errs.push(`FROM ${m[1]}: expected debian:12`);
    stage = { name: m[2], ops: [] }; stages.push(stage); continue;
  }
  stage.ops.push(i);
  if (i.op === 'COPY') {
    const from = /--from=(\S+)/.exec(i.arg);
    if (from && !stages.slice(0, -1).some((s) => s.name === from[1])) errs.push(`COPY --from=${from[1]}: no earlier stage of that name`);
    if (!from) {
      const srcs = i.arg.split(/\s+/).filter((w) => !w.startsWith('--')).slice(0, -1);
      for (const s of srcs) if (!fs.existsSync(path.join(repo, s))) errs.push(`COPY ${s}: not in the repository`);
    }
  }
  if (i.op === 'RUN') {
    for (const m of i.arg.matchAll(/apt-get install ([^&;|]*)/g))
      for (const w of m[1].split(/\s+/)) if (w && !w.startsWith('-') && !w.startsWith('$')) pkgs.push(`${stages.length}:${w}`);
  }
}
if (stages.length < 2) errs.push('expected a multi-stage build (build + runtime)');
const rt = stages[stages.length - 1]?.ops ?? [];
const order = rt.map((i) => i.op);
const user = rt.filter((i) => i.op === 'USER').pop();
if (!user || /^(root|0)(:|$)/.test(user.arg)) errs.push('runtime stage: USER must be a non-root user');
if (order.lastIndexOf('USER') > order.indexOf('CMD')) errs.push('USER must come before CMD');
if (!rt.some((i) => i.op === 'EXPOSE' && /\b8000\b/.test(i.arg))) errs.push('EXPOSE 8000 missing');
const hc = rt.find((i) => i.op === 'HEALTHCHECK');
if (!hc || !/\/healthz/.test(hc.arg)) errs.push('HEALTHCHECK on /healthz missing');
const cmd = rt.find((i) => i.op === 'CMD');
let argv = [];
try { argv = JSON.parse(cmd.arg); } catch { errs.push('CMD must be exec (JSON) form'); }
const want = [['--skills', '/skills'], ['--host', '0.0.0.0'], ['--allowed-hosts', '*']];
for (const [f, v] of want) { const k = argv.indexOf(f); if (k < 0 || argv[k + 1] !== v) errs.push(`CMD: ${f} ${v} missing`); }
if (rt.some((i) => i.op === 'RUN' && /\b(gcc|make|-dev)\b/.test(i.arg))) errs.push('runtime stage installs build tools');
console.log(JSON.stringify({ errs, pkgs, argv }));
EOF
)"
derr="$(node -e 'const r=JSON.parse(process.argv[1]); console.log(r.errs.join("\n"))' "$out" 2>&1)"
if [ -z "$derr" ]; then ok "docker: Dockerfile structure (stages, order, USER, EXPOSE, HEALTHCHECK, CMD)"
else bad "docker: Dockerfile structure" "$derr"; fi
pkgs="$(node -e 'for (const p of JSON.parse(process.argv[1]).pkgs) console.log(p)' "$out" 2>/dev/null)"
# One apt-cache call for all of them (each call reads the package lists
# again: about a second and a half apiece).
names="$(for sp in $pkgs; do echo "${sp#*:}"; done | sort -u)"
# shellcheck disable=SC2086
found="$(apt-cache show --no-all-versions $names 2>/dev/null | sed -n 's/^Package: //p' | sort -u)"
notfound="$(comm -23 <(echo "$names") <(echo "$found") | sed 's/^/ /' | tr -d '\n')"
if [ -n "$pkgs" ] && [ -z "$notfound" ]; then ok "docker: $(wc -w <<<"$pkgs") apt packages exist in Debian (apt-cache show)"
else bad "docker: apt packages unknown to apt-cache:${notfound:- (none parsed)} (run apt-get update?)"; fi
# The build stage installs exactly the build list of tests/deps.sh.
deps_build="$(sed -n '/^pkgs=(/,/)/p' "$repo/tests/deps.sh" | tr -d '()' | sed 's/pkgs=//' | tr -s ' \n' '\n' | grep -v '^$' | sort)"
df_build="$(grep '^1:' <<<"$pkgs" | cut -d: -f2 | sort)"
if [ "$deps_build" = "$df_build" ]; then ok "docker: build stage packages = tests/deps.sh build list"
else bad "docker: build stage packages differ from tests/deps.sh build" "$(diff <(echo "$deps_build") <(echo "$df_build"))"; fi
# Runtime libraries: every shared library the binary links comes from an
# installed package the runtime stage names (or one of Debian 12's required set).
rtpk="$(grep '^2:' <<<"$pkgs" | cut -d: -f2)"
# shellcheck disable=SC2086
closure="$(apt-cache depends --recurse --no-recommends --no-suggests --no-conflicts --no-breaks \
    --no-replaces --no-enhances --installed $rtpk 2>/dev/null | sed -E 's/^ *(Pre)?Depends: //; s/:amd64$//; s/[<>]//g' | sort -u)"
miss=""
# One dpkg -S and one dpkg-query for every library (a call apiece took most
# of a minute); a library no package owns is not counted, as before.
# shellcheck disable=SC2046
owners="$(dpkg -S $(ldd "$bin" | awk '/=>/{print $3}' | xargs -r readlink -f | sort -u) 2>/dev/null |
    grep -v '^diversion ' | sed -E 's/: \/.*//; s/, /\n/g' | cut -d: -f1 | sort -u)"
# shellcheck disable=SC2086
required="$(dpkg-query -W -f='${Package} ${Priority}\n' $owners 2>/dev/null | awk '$2 == "required" {print $1}')"
for owner in $owners; do
    grep -qxF "$owner" <<<"$required" && continue
    grep -qxF "$owner" <<<"$closure" || miss="$miss $owner"
done
if [ -z "$miss" ]; then ok "docker: runtime stage provides every library the binary links"
else bad "docker: runtime stage lacks libraries from:$miss"; fi
# The build stage's COPY set and commands, run here (same Debian 12 packages).
b="$tmp/docker-build"; mkdir -p "$b/src"
(cd "$repo" && cp -pR Makefile VERSION server skills hooks "$b/src/" &&
    mkdir -p "$b/src/deploy" && cp -pR deploy/systemd "$b/src/deploy/")
# Compiling every file again would repeat the build the binary came from
# (about a minute of both cores). When that build's objects are at hand they
# come along, newer than the copied sources, so make here only links and
# installs; what the compile would prove about the COPY set, that every file
# it reads is in it, the objects' dependency lists tell (-MMD names each
# source and project header; -MP makes a missing header no error for make,
# so each is looked for here). Without them, everything is compiled.
objs="$(dirname "$bin")/obj"
reused=""
if [ "$objs" = "$repo/build/obj" ] && ls "$objs"/*.d >/dev/null 2>&1; then
    mkdir -p "$b/src/build/obj" && cp -p "$objs"/*.o "$objs"/*.d "$b/src/build/obj/"
    read_files="$(sed 's/\\$//' "$objs"/*.d | tr ' \t' '\n\n' | grep -v -e ':$' -e '^$' -e '^build/' | sort -u)"
    nsrc=$(ls "$repo"/server/*.c | wc -l)
    missing=""
    for f in $read_files; do [ -e "$b/src/$f" ] || missing="$missing $f"; done
    if [ "$(grep -c '\.c$' <<<"$read_files")" -lt "$nsrc" ]; then
        bad "docker: the build's dependency lists name fewer sources than server/ holds ($nsrc)"
    elif [ -n "$missing" ]; then
        bad "docker: the build reads files the COPY set lacks:$missing"
    else
        ok "docker: the COPY set holds every source and header the build reads ($(wc -l <<<"$read_files") files)"
    fi
    reused=" (objects of $objs reused)"
fi
if out="$(cd "$b/src" && make -j"$(nproc)" 2>&1 && make install PREFIX=/usr/local DESTDIR="$b/out" 2>&1)" \
    && [ -x "$b/out/usr/local/bin/skill-mcp" ] && [ -d "$b/out/usr/local/share/skill-mcp/skills" ]; then
    ok "docker: build stage (COPY set + make + make install DESTDIR=/out) works from the copied files$reused"
else bad "docker: build stage from the COPY set" "$(tail -5 <<<"$out")"; fi

# ---- Kubernetes (not applied to a cluster here) -------------------------------
npmdir="${DEPLOY_CHECK_NPM:-$repo/build/deploy-check-npm}"
if [ ! -f "$npmdir/node_modules/kubernetes-models/package.json" ] || [ ! -f "$npmdir/node_modules/yaml/package.json" ]; then
    mkdir -p "$npmdir"
    (cd "$npmdir" && npm install --no-audit --no-fund --silent --no-save --prefix "$npmdir" \
        kubernetes-models@5.1.0 yaml@2.9.1 >/dev/null 2>&1)
fi
if [ ! -f "$npmdir/node_modules/kubernetes-models/package.json" ]; then
    bad "k8s: npm install kubernetes-models yaml into $npmdir failed"
else
    sk="$tmp/k8s-skills"
    cat >"$npmdir/check.mjs" <<'EOF'
import fs from 'node:fs';
import path from 'node:path';
import YAML from 'yaml';
const [dir, skillsOut] = process.argv.slice(2);
const models = {
  'apps/v1/Deployment': 'kubernetes-models/apps/v1/Deployment',
  'v1/Service': 'kubernetes-models/v1/Service',
  'v1/ConfigMap': 'kubernetes-models/v1/ConfigMap',
  'autoscaling/v2/HorizontalPodAutoscaler': 'kubernetes-models/autoscaling/v2/HorizontalPodAutoscaler',
};
const res = []; const objs = {};
const rec = (name, err) => res.push({ name, err: err || '' });
for (const f of fs.readdirSync(dir).filter((f) => /\.ya?ml$/.test(f)).sort()) {
  const docs = YAML.parseAllDocuments(fs.readFileSync(path.join(dir, f), 'utf8'), { strict: true, uniqueKeys: true });
  for (const d of docs) {
    if (d.errors.length) { rec(`${f}: YAML parse`, d.errors.map((e) => e.message).join('; ')); continue; }
    const o = d.toJS();
    if (!o) continue;
    const key = `${o.apiVersion}/${o.kind}`;
    const missing = ['apiVersion', 'kind'].filter((k) => !o[k]).concat(o.metadata?.name ? [] : ['metadata.name']);
    rec(`${f}: YAML parse, apiVersion/kind/metadata.name`, missing.length ? `missing ${missing.join(', ')}` : '');
    if (!models[key]) { rec(`${f}: schema`, `no model for ${key}`); continue; }
    const mod = await import(models[key]);
    try { new mod[o.kind](o).validate(); rec(`${f}: schema ${key} (kubernetes-models)`); }
    catch (e) { rec(`${f}: schema ${key} (kubernetes-models)`, e.message); }
    objs[o.kind] = o;
  }
}
const dep = objs.Deployment, svc = objs.Service, cm = objs.ConfigMap, hpa = objs.HorizontalPodAutoscaler;
const pod = dep?.spec?.template?.spec; const c = pod?.containers?.[0];
const chk = (name, cond) => rec(name, cond ? '' : 'not satisfied');
chk('k8s: liveness /healthz, readiness /readyz', c?.livenessProbe?.httpGet?.path === '/healthz' && c?.readinessProbe?.httpGet?.path === '/readyz');
chk('k8s: resources requests and limits', c?.resources?.requests?.cpu && c?.resources?.limits?.memory);
chk('k8s: runAsNonRoot, readOnlyRootFilesystem', pod?.securityContext?.runAsNonRoot === true && c?.securityContext?.readOnlyRootFilesystem === true);
const tmpMount = c?.volumeMounts?.find((m) => m.mountPath === '/tmp');
chk('k8s: /tmp is an emptyDir (script scratch dirs)', tmpMount && pod.volumes.find((v) => v.name === tmpMount.name)?.emptyDir);
const args = c?.args ?? [];
const skillsDir = args[args.indexOf('--skills') + 1];
const skMount = c?.volumeMounts?.find((m) => m.mountPath === skillsDir);
const skVol = skMount && pod.volumes.find((v) => v.name === skMount.name);
chk('k8s: --skills is the ConfigMap volume, every item key exists', skVol?.configMap?.name === cm?.metadata?.name
  && (skVol.configMap.items ?? []).every((it) => cm.data?.[it.key] !== undefined));
chk('k8s: terminationGracePeriodSeconds > --shutdown-timeout',
  (pod?.terminationGracePeriodSeconds ?? 30) > Number(args[args.indexOf('--shutdown-timeout') + 1] ?? 30));
chk('k8s: Service selects the pod labels, targetPort names a container port',
  Object.entries(svc?.spec?.selector ?? { x: 1 }).every(([k, v]) => dep.spec.template.metadata.labels[k] === v)
  && svc.spec.ports.every((p) => typeof p.targetPort === 'number' || c.ports.some((cp) => cp.name === p.targetPort)));
chk('k8s: Deployment selector matches its template labels',
  Object.entries(dep?.spec?.selector?.matchLabels ?? {}).every(([k, v]) => dep.spec.template.metadata.labels[k] === v));
chk('k8s: HPA targets the Deployment on CPU', hpa?.spec?.scaleTargetRef?.name === dep?.metadata?.name
  && hpa.spec.scaleTargetRef.kind === 'Deployment' && hpa.spec.metrics?.some((m) => m.resource?.name === 'cpu'));
// Lay the ConfigMap out as the pod would see it, for the skill-load check.
for (const it of skVol?.configMap?.items ?? []) {
  const p = path.join(skillsOut, it.path);
  fs.mkdirSync(path.dirname(p), { recursive: true });
  fs.writeFileSync(p, cm.data[it.key]);
}
console.log(JSON.stringify({ res, args }));
EOF
    out="$(cd "$npmdir" && node check.mjs "$dep/k8s" "$sk" 2>&1)"
    if ! node -e 'JSON.parse(process.argv[1])' "$out" >/dev/null 2>&1; then
        bad "k8s: check script" "$out"
    else
        while IFS=$'\t' read -r name err; do
            if [ -z "$err" ]; then ok "$name"; else bad "$name" "$err"; fi
        done < <(node -e 'for (const r of JSON.parse(process.argv[1]).res) console.log(r.name + "\t" + r.err.replace(/\s+/g, " "))' "$out")
        k8sargs="$(node -e 'console.log(JSON.parse(process.argv[1]).args.join(" "))' "$out")"
        n="$(ls "$sk" 2>/dev/null | wc -l)"
        eo="$("$bin" export "$tmp/k8s-export" --skills "$sk" 2>&1)"; rc=$?
        if [ $rc -eq 0 ] && grep -q " $n skill(s) written" <<<"$eo" && [ "$n" -gt 0 ]; then
            ok "k8s: the ConfigMap's $n example skill(s) load in skill-mcp (export)"
        else bad "k8s: the ConfigMap's example skills do not load" "$eo"; fi
    fi
fi

# ---- man page ----------------------------------------------------------------
# skill-mcp(1) comes from --help-man, the table --help prints: every option
# and command of --help is in the rendered page, and groff has nothing to
# say about it.
man1="$tmp/skill-mcp.1"
"$bin" --help-man >"$man1"
if ! command -v groff >/dev/null || ! command -v man >/dev/null; then
    bad "man: groff and man missing (tests/deps.sh test installs groff-base and man-db)"
else
    w="$( { groff -man -Tutf8 -ww -z "$man1"; MANWIDTH=100 LC_ALL=C man -l "$man1" >/dev/null; } 2>&1)"
    [ -z "$w" ] && ok "man: groff -ww and man -l render skill-mcp(1) without warnings" || bad "man: warnings" "$w"
    page="$(MANWIDTH=200 LC_ALL=C man -l "$man1" 2>/dev/null | sed 's/.\x08//g')"
    want="$("$bin" --help | sed -n 's/^  \(--[a-z][a-z-]*\).*/\1/p; s/^  \([a-z][a-z]*\)  .*/\1/p')"
    absent=""
    # each as an item of its own (the tag at the page's indent), not just named in prose
    # (an option's tag line is the option and its argument alone)
    for f in $want; do
        # a tag shorter than the indent shares its line with the text
        if [ ${#f} -lt 7 ]; then re="^       $f +[^ ]"; else re="^       $f( [^ ]+)?$"; fi
        grep -qE -- "$re" <<<"$page" || absent="$absent $f"
    done
    if [ "$(wc -w <<<"$want")" -gt 60 ] && [ -z "$absent" ]; then
        ok "man: all $(wc -w <<<"$want") options and commands of --help are in the page"
    else bad "man: missing from the page:${absent:- (no options read from --help)}"; fi
    # and what --help says of each option is what the page says
    h="$("$bin" --help | sed -n 's/^  --tasks-redis-file FILE *//p')"
    grep -qF "$h" <<<"$(tr -s ' \n' '  ' <<<"$page")" && ok "man: the help text is the same text" ||
        bad "man: --tasks-redis-file's help text not in the page" "$h"
fi
# In a build folder of its own: the shared one's page is read by the suites
# running beside this one (make install, make deb), and removing it there
# raced them. -o: the copied binary is taken as built.
bdir="$tmp/man-build"
mkdir -p "$bdir" && cp "$bin" "$bdir/skill-mcp"
mo="$(cd "$repo" && make -s -o "$bdir/skill-mcp" man BUILD="$bdir" 2>&1)"
if [ -s "$bdir/skill-mcp.1" ] && cmp -s "$bdir/skill-mcp.1" <("$bin" --help-man); then
    ok "man: make man writes BUILD/skill-mcp.1 from the binary"
else bad "man: make man" "$mo"; fi

# ---- flags used in deploy/ exist -----------------------------------------------
help="$("$bin" --help 2>&1)"
used="$( { sed -n '/^ExecStart=/,/[^\\]$/p' "$unit"; grep -A3 '^CMD' "$df"; echo "${k8sargs:-}";
          sed -n 's/^#* *\([a-z][a-z-]*\):.*/--\1/p' "$conf"; } \
    | grep -oE -- '--[a-z][a-z-]+' | sort -u)"
unknown=""
for f in $used; do grep -qE -- "(^|[ ,])$f([ =,]|$)" <<<"$help" || unknown="$unknown $f"; done
if [ -n "$used" ] && [ -z "$unknown" ]; then ok "flags: $(wc -w <<<"$used") skill-mcp flags used in deploy/ are in --help"
else bad "flags: unknown to skill-mcp --help:${unknown:- (none found)}"; fi

finish
