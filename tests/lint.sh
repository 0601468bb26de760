#!/usr/bin/env bash
# make lint: project conventions checked by machine.
#  1. banned calls (shell, unbounded string functions) in server/
#  2. every non-static symbol of a module carries that module's prefix
#  3. no cycle in "server module X includes server module Y's header"
#     (server/X.c and server/X.h are module X, and so is X_int.h, the private
#     header the files of one module share; a header-only module is a leaf
#     unless it includes others)
set -uo pipefail
build=${1:-build}
fail=0; pass=0
banned='\b(system|popen|sprintf|vsprintf|strcpy|strcat|strtok|atoi|atol|gets)[[:space:]]*\('
if hits=$(grep -nE "$banned" server/*.c | grep -v '^\s*//' ); then
    echo "FAIL banned calls:"; echo "$hits"; fail=$((fail + 1))
else
    echo "ok   no banned calls"; pass=$((pass + 1))
fi
declare -A prefix=(
    [config]='cfg_' [frontmatter]='fm_' [markdown]='md_' [search]='search_' [search_tok]='search_' [search_build]='search_' [search_syn]='search_' [skills]='skills_' [scan]='(scan_|skills_)' [bodies]='(bodies_|skills_)'
    [jail]='jail_' [http]='http_' [rpc]='rpc_' [mcp]='mcp_' [resources]='res_' [tools]='tools_'
    [stats]='stats_' [manifest]='manifest_' [skillsext]='skillsext_' [loop]='loop_' [main]='main$' [runner]='run_' [script]='script_' [hooks]='hook_' [shape]='shape_' [discovery]='discovery_' [auth]='auth_' [validate]='validate_' [tasks]='tasks_' [lock]='lock_' [session]='session_' [fetch]='fetch_' [json]='jf_' [envelope]='env_' [call]='call_'
    [shape_tokens]='shape_' [shape_json]='shape_' [tools_list]='tools_' [tools_load]='tools_' [tools_run]='tools_'
    [fmfast]='fm_' [lockfile]='lock_' [lockstore]='lock_' [tstore]='(tstore_|trec_)' [tstore_mem]='tstore_mem_' [tstore_redis]='tstore_redis_'
    [cli_export]='cli_' [cli_fetch]='cli_' [cli_lock]='cli_' [cli_token]='cli_' [cli_validate]='cli_'
    [util]='(x|x_|err_|buf_|log_|now_|utf8_|hash_|hex_|pct_|iso_|list_|tslot_)'
    [script_env]='script_'
    [redact]='redact_'
    [stdio_mcp]='stdio_'
    [metrics]='metrics_'
    [http_peer]='http_' [http_stream]='http_' [http_ops]='http_'
    [pcount]='pcount_' [connslots]='connslots_'
    [acl]='acl_'
    [reloadable]='reloadable_'
    [rcache]='rcache_'
    [oauth]='oauth_' [jwt]='jwt_' [dynlib]='dynlib_'
    [yamlcore]='yc_'
    [accesslog]='accesslog_'
    [notify]='notify_'
    [cfgfile]='cfgfile_' [sdnotify]='sdn_'
)
bad=0
# One nm over every object ("obj/x.o:0000 T sym" lines): a process per
# object was most of the lint's time on a busy machine.
defs=$(nm -A -g --defined-only "$build"/obj/*.o | awk '$2 ~ /[TDBR]/ {
    f = $1; sub(/:.*/, "", f); sub(/.*\//, "", f); sub(/\.o$/, "", f); print f, $3 }')
for o in "$build"/obj/*.o; do
    m=$(basename "$o" .o)
    [ -n "${prefix[$m]:-}" ] || { echo "FAIL $m.o: no prefix rule for this module"; bad=1; }
done
while read -r m sym; do
    p=${prefix[$m]:-}
    [ -n "$p" ] || continue
    [[ "$sym" =~ ^$p ]] || { echo "FAIL $m.o exports '$sym' without prefix $p"; bad=1; }
done <<<"$defs"
if [ $bad = 0 ]; then echo "ok   exported symbols carry their module prefix"; pass=$((pass + 1)); else fail=$((fail + 1)); fi
# Edges "X Y": server/X.{c,h} includes "Y.h" of another server module.
edges=$(for f in server/*.c server/*.h; do
    m=$(basename "$f"); m=${m%.*}; m=${m%_int}
    sed -nE 's/^#include "([A-Za-z0-9_]+)\.h".*/\1/p' "$f" | while read -r d; do
        [ -e "server/$d.h" ] || continue
        d=${d%_int}
        [ "$d" != "$m" ] && echo "$m $d"
    done
done | sort -u)
# Depth-first search; prints the first cycle as "a -> b -> ... -> a".
dfs='
    { adj[$1] = adj[$1] " " $2; nodes[$1]; nodes[$2] }
    function dfs(n,    k, i, m, c) {
        state[n] = 1; stack[++depth] = n
        k = split(adj[n], next_, " ")
        for (i = 1; i <= k; i++) {
            m = next_[i]
            if (state[m] == 1) {
                c = m
                for (j = depth; j >= 1 && stack[j] != m; j--) ;
                for (j = j + 1; j <= depth; j++) c = c " -> " stack[j]
                print c " -> " m; return 1
            }
            if (!state[m] && dfs(m)) return 1
            k = split(adj[n], next_, " ")
        }
        state[n] = 2; depth--
        return 0
    }
    END { for (n in nodes) if (!state[n] && dfs(n)) exit }
'
cycle=$(awk "$dfs" <<<"$edges")
if [ -n "$cycle" ]; then
    echo "FAIL module include cycle: $cycle"; fail=$((fail + 1))
else
    echo "ok   no module include cycle ($(wc -l <<<"$edges") include edges)"; pass=$((pass + 1))
fi
# The same for definitions: "X Y" when X's object uses a symbol Y's object
# defines, so a function declared in one module's header but defined in
# another cannot hide a cycle. The files that share a private X_int.h are
# one module X.
# module of each object: the X of the X_int.h its source includes, or its own name
declare -A modof=()
for o in "$build"/obj/*.o; do
    m=$(basename "$o" .o)
    int=$(sed -nE 's/^#include "([A-Za-z0-9_]+)_int\.h".*/\1/p' "server/$m.c" 2>/dev/null | head -1)
    modof[$m]=${int:-$m}
done
mods=$(for m in "${!modof[@]}"; do echo "$m ${modof[$m]}"; done)
symedges=$(
    { awk '{print "D", $2, $1}' <<<"$defs"
      nm -A -u "$build"/obj/*.o | awk '{f = $1; sub(/:.*/, "", f); sub(/.*\//, "", f);
                                        sub(/\.o$/, "", f); print "U", $NF, f}'
    } | awk -v mods="$mods" '
        BEGIN { n = split(mods, a, "\n"); for (i = 1; i <= n; i++) { split(a[i], p, " "); mod[p[1]] = p[2] } }
        $1 == "D" { def[$2] = mod[$3]; next }
        { m = mod[$3]; if (($2 in def) && def[$2] != m) print m, def[$2] }' | sort -u)
symcycle=$(awk "$dfs" <<<"$symedges")
if [ -n "$symcycle" ]; then
    echo "FAIL module definition cycle: $symcycle"; fail=$((fail + 1))
else
    echo "ok   no module definition cycle ($(wc -l <<<"$symedges") use edges)"; pass=$((pass + 1))
fi
echo "SUMMARY lint: $pass passed, $fail failed"
[ $fail -eq 0 ]
