#!/usr/bin/env bash
# A fixture for tests/selftest.sh: a strict script whose load generator gave
# no RESULT line. It must stop, saying where, with its SUMMARY line.
set -eu
. "$(dirname "$0")/../strict.sh"
STRICT_SUMMARY=stops-early
line=$(printf 'unable to connect\n' | grep RESULT)
echo "not reached: $line"
strict_summary 1 0
