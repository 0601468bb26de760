#!/usr/bin/env bash
# make lint: project conventions checked by machine.
#  1. banned calls (shell, unbounded string functions) in server/
#  2. every non-static symbol of a module carries that module's prefix
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
    [config]='cfg_' [frontmatter]='fm_' [markdown]='md_' [search]='search_' [skills]='skills_'
    [jail]='jail_' [http]='http_' [rpc]='rpc_' [mcp]='mcp_' [resources]='res_' [tools]='tools_'
    [stats]='stats_' [manifest]='manifest_' [skillsext]='skillsext_' [loop]='loop_' [main]='main$' [runner]='run_' [script]='script_' [hooks]='hook_' [shape]='shape_' [discovery]='discovery_' [auth]='auth_' [validate]='validate_' [tasks]='tasks_' [lock]='lock_' [session]='session_' [fetch]='fetch_' [json]='jf_' [oauth]='oauth_' [jwt]='jwt_'
    [util]='(x|x_|err_|buf_|log_|now_|utf8_)'
)
bad=0
for o in "$build"/obj/*.o; do
    m=$(basename "$o" .o)
    p=${prefix[$m]:-}
    if [ -z "$p" ]; then echo "FAIL $m.o: no prefix rule for this module"; bad=1; continue; fi
    while read -r sym; do
        [[ "$sym" =~ ^$p ]] || { echo "FAIL $m.o exports '$sym' without prefix $p"; bad=1; }
    done < <(nm -g --defined-only "$o" | awk '$2 ~ /[TDBR]/ {print $3}')
done
if [ $bad = 0 ]; then echo "ok   exported symbols carry their module prefix"; pass=$((pass + 1)); else fail=$((fail + 1)); fi
echo "SUMMARY lint: $pass passed, $fail failed"
[ $fail -eq 0 ]
