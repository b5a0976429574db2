#!/bin/sh
# The call-circle check can fail: two objects that call each other (a.o
# calls b(), b.o calls a()) must be refused, and the same pair without the
# call back passed. Then the library's objects (OBJDIR, the object files
# of the hiredhand_obj target) are checked: no circle at all.
# Usage: test_check_calls.sh OBJDIR [CC]
set -eu
[ $# -ge 1 ] || { echo "usage: test_check_calls.sh OBJDIR [CC]" >&2; exit 2; }
here=$(cd "$(dirname "$0")/../.." && pwd)
check=$here/scripts/check-calls.sh
cc=${2:-cc}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
printf 'int b(void);\nint a(void) { return b(); }\n' > "$tmp/a.c"
printf 'int a(void);\nint b(void) { return a() + 1; }\n' > "$tmp/b.c"
"$cc" -c -o "$tmp/a.o" "$tmp/a.c"
"$cc" -c -o "$tmp/b.o" "$tmp/b.c"
out=$("$check" "$tmp" 2>&1) && { echo "FAIL: a circle passed"; exit 1; }
case "$out" in *"a -> b: b"*"b -> a: a"* | *"b -> a: a"*"a -> b: b"*) ;;
*) echo "FAIL: the circle's edges and symbols are not named: $out"; exit 1 ;; esac
printf 'int b(void) { return 1; }\n' > "$tmp/b.c"
"$cc" -c -o "$tmp/b.o" "$tmp/b.c"
"$check" "$tmp" >/dev/null || { echo "FAIL: objects without circle were refused"; exit 1; }
"$check" "$1"
