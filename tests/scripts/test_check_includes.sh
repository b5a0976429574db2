#!/bin/sh
# The include-circle check can fail: a tree with a circle (a.h includes
# b.h, b.c includes a.h) must be refused, and the same tree without it
# passed. Then the real tree is checked: no circle at all.
set -eu
here=$(cd "$(dirname "$0")/../.." && pwd)
check=$here/scripts/check-includes.sh
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
mkdir -p "$tmp/src"
printf '#include "b.h"\n' > "$tmp/src/a.h"
printf '#include "a.h"\n' > "$tmp/src/b.c"
: > "$tmp/src/b.h"
if "$check" "$tmp" >/dev/null; then echo "FAIL: a circle passed"; exit 1; fi
: > "$tmp/src/b.c"
"$check" "$tmp" >/dev/null || { echo "FAIL: a tree without circle was refused"; exit 1; }
"$check" "$here"
