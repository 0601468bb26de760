#!/usr/bin/env bash
# digest.sh - a compact, plain-text digest of a git repository or directory:
# file counts by extension, total size, largest files, and (when it is a git
# work tree) branch, status and recent commits.
#
#   digest.sh [DIR] [--top N] [--commits N]
#
# Every external command runs under `timeout`, so the script cannot hang.
# Exit codes: 0 ok, 2 bad arguments / DIR not a readable directory.
set -u
set -o pipefail
export LC_ALL=C
export GIT_TERMINAL_PROMPT=0 GIT_OPTIONAL_LOCKS=0 GIT_PAGER=cat PAGER=cat

usage() { echo "usage: digest.sh [DIR] [--top N] [--commits N]" >&2; }
die() { echo "digest.sh: error: $*" >&2; exit 2; }

dir="."
top=10
commits=10
max_files=200000
have_dir=0
while [ $# -gt 0 ]; do
  case "$1" in
    --top) [ $# -ge 2 ] || die "--top needs a value"; top="$2"; shift 2 ;;
    --commits) [ $# -ge 2 ] || die "--commits needs a value"; commits="$2"; shift 2 ;;
    -h|--help) usage; exit 0 ;;
    --) shift; [ $# -gt 0 ] && { dir="$1"; have_dir=1; shift; } ;;
    -*) usage; die "unknown option: $1" ;;
    *) [ "$have_dir" -eq 0 ] || die "only one DIR may be given"; dir="$1"; have_dir=1; shift ;;
  esac
done
case "$top" in ''|*[!0-9]*) die "--top must be a number" ;; esac
case "$commits" in ''|*[!0-9]*) die "--commits must be a number" ;; esac
[ "$top" -le 50 ] || top=50
[ "$commits" -le 50 ] || commits=50
[ -e "$dir" ] || die "no such directory: $dir (relative paths start in the skill directory; pass an absolute path)"
[ -d "$dir" ] || die "not a directory: $dir"
[ -r "$dir" ] && [ -x "$dir" ] || die "cannot read directory: $dir"
dir=$(cd "$dir" && pwd -P) || die "cannot enter $dir"

human() {  # bytes -> short human size
  awk -v b="$1" 'BEGIN { split("B KiB MiB GiB TiB", u, " "); i = 1;
    while (b >= 1024 && i < 5) { b /= 1024; i++ }
    if (i == 1) printf "%d %s", b, u[i]; else printf "%.1f %s", b, u[i] }'
}

tmp=$(mktemp -d "${TMPDIR:-/tmp}/digest.XXXXXX") || die "cannot create a temp dir"
trap 'rm -rf "$tmp"' EXIT

# --- is it a git work tree? ------------------------------------------------
is_git=0
git_note=""
if command -v git >/dev/null 2>&1; then
  if out=$(timeout 10 git -C "$dir" --no-pager rev-parse --is-inside-work-tree 2>&1); then
    [ "$out" = "true" ] && is_git=1
  else
    case "$out" in
      *"dubious ownership"*) git_note="git refused this repository (owned by another user; see safe.directory); listing files instead" ;;
      *"not a git repository"*) ;;
      *) git_note="git failed: $(printf '%s' "$out" | head -n 1)" ;;
    esac
  fi
else
  git_note="git is not installed; listing files without history"
fi

# --- list files as NUL-separated "size<TAB>path" ---------------------------
echo "progress: listing files in $dir" >&2
listing_capped=0
if [ "$is_git" -eq 1 ]; then
  # Tracked files plus untracked files that are not ignored.
  timeout 60 git -C "$dir" --no-pager ls-files -z --cached --others --exclude-standard \
    > "$tmp/names" 2>"$tmp/err" || git_note="git ls-files failed: $(head -n 1 "$tmp/err")"
  ( cd "$dir" && head -z -n "$max_files" "$tmp/names" \
      | timeout 60 xargs -0 -r stat --printf '%s\t%n\0' -- 2>/dev/null ) > "$tmp/files" || true
  [ "$(tr -cd '\0' < "$tmp/names" | wc -c)" -gt "$max_files" ] && listing_capped=1
else
  ( cd "$dir" && timeout 60 find . \
      \( -name .git -o -name node_modules -o -name __pycache__ -o -name .venv -o -name venv \
         -o -name .tox -o -name .mypy_cache -o -name target -o -name .cache \) -prune \
      -o -type f -printf '%s\t%P\0' 2>/dev/null ) | head -z -n "$max_files" > "$tmp/files" || true
  [ "$(tr -cd '\0' < "$tmp/files" | wc -c)" -ge "$max_files" ] && listing_capped=1
fi

nfiles=$(tr -cd '\0' < "$tmp/files" | wc -c)
total=$(tr '\0' '\n' < "$tmp/files" | awk -F'\t' '{ s += $1 } END { printf "%d", s }')

# --- header ---------------------------------------------------------------
echo "# Digest of $dir"
if [ "$is_git" -eq 1 ]; then
  echo "kind: git work tree (tracked + untracked, .gitignore respected)"
else
  echo "kind: plain directory (skipping .git, node_modules, __pycache__, venvs, target)"
fi
[ -n "$git_note" ] && echo "note: $git_note"
echo "files: $nfiles   total size: $(human "$total")"
[ "$listing_capped" -eq 1 ] && echo "note: stopped after $max_files files; counts are partial"

if [ "$nfiles" -eq 0 ]; then
  echo "(no files)"
else
  # --- by extension ---------------------------------------------------------
  echo
  echo "## Files by extension (top $top)"
  tr '\0' '\n' < "$tmp/files" | awk -F'\t' '{
      n = $2; sub(/.*\//, "", n);
      if (n ~ /^\.[^.]*$/ || n !~ /\./) ext = "(none)";
      else { ext = n; sub(/.*\./, ".", ext); ext = tolower(ext) }
      c[ext]++; s[ext] += $1 }
    END { for (e in c) printf "%d\t%d\t%s\n", c[e], s[e], e }' \
    | sort -t "$(printf '\t')" -k1,1nr -k3,3 > "$tmp/ext"
  head -n "$top" "$tmp/ext" | while IFS="$(printf '\t')" read -r c s e; do
    printf '%-12s %6d files  %10s\n' "$e" "$c" "$(human "$s")"
  done
  next=$(wc -l < "$tmp/ext")
  [ "$next" -gt "$top" ] && echo "... and $((next - top)) more extensions"

  # --- largest files ----------------------------------------------------------
  echo
  echo "## Largest files (top $top)"
  sort -z -t "$(printf '\t')" -k1,1nr "$tmp/files" | head -z -n "$top" | tr '\0' '\n' \
    | while IFS="$(printf '\t')" read -r s p; do
        printf '%10s  %s\n' "$(human "$s")" "$p"
      done
fi

# --- git details ------------------------------------------------------------
if [ "$is_git" -eq 1 ]; then
  echo
  echo "## Git"
  branch=$(timeout 10 git -C "$dir" --no-pager symbolic-ref --short -q HEAD 2>/dev/null || echo "(detached)")
  head_rev=$(timeout 10 git -C "$dir" --no-pager rev-parse --short -q --verify HEAD 2>/dev/null || echo "(no commits)")
  echo "branch: $branch   head: $head_rev"
  ncommits=$(timeout 20 git -C "$dir" --no-pager rev-list --count HEAD 2>/dev/null || echo 0)
  echo "commits: $ncommits"
  remote=$(timeout 10 git -C "$dir" --no-pager remote 2>/dev/null | head -n 3 | tr '\n' ' ')
  [ -n "$remote" ] && echo "remotes: $remote"
  if timeout 30 git -C "$dir" --no-pager status --porcelain 2>/dev/null > "$tmp/status"; then
    mod=$(grep -c '^ *[MADRCU]' "$tmp/status" || true)
    unt=$(grep -c '^??' "$tmp/status" || true)
    echo "working tree: $mod changed, $unt untracked"
  else
    echo "working tree: (git status timed out or failed)"
  fi
  if [ "$commits" -gt 0 ] && [ "$ncommits" != "0" ]; then
    echo
    echo "## Recent commits (last $commits)"
    timeout 20 git -C "$dir" --no-pager log -n "$commits" --no-color \
      --date=short --format='%h %ad %<(18,trunc)%an %<(70,trunc)%s' 2>/dev/null \
      | sed 's/ *$//' || echo "(git log failed)"
  fi
fi
exit 0
