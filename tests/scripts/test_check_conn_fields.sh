#!/bin/sh
# The hh__conn field check can fail: in a copy of the headers, a file that
# reads fields of a connection (the first, an array and the last of the
# struct, through a pointer and through a value) must be refused with each
# access named as file:line, while conn.c, which owns them, may read them;
# and the same files through the accessors pass. Then the library's
# sources are checked: only conn.c and redis.c touch the fields.
# Usage: test_check_conn_fields.sh OBJDIR [CC]
# OBJDIR: the hiredhand_obj target's folder (its flags.make: include folders).
set -eu
[ $# -ge 1 ] || { echo "usage: test_check_conn_fields.sh OBJDIR [CC]" >&2; exit 2; }
here=$(cd "$(dirname "$0")/../.." && pwd)
check=$here/scripts/check-conn-fields.sh
cc=${2:-cc}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
mkdir "$tmp/src"
cp "$here"/src/*.h "$tmp/src/"
first=$(sed -n '/^typedef struct hh__conn {/{n;p;}' "$here/src/conn.h" | sed 's/.*[ *]\([a-z_]*\);.*/\1/')
printf '#include "conn.h"\nint hh__owner(const hh__conn *c);\nint hh__owner(const hh__conn *c) { return c->version + (c->%s != 0); }\n' \
    "$first" > "$tmp/src/conn.c"
cat > "$tmp/src/planted.c" <<PLANTED
#include "conn.h"
int hh__planted(const hh__conn *c);
int hh__planted(const hh__conn *c) {
    hh__conn copy = *c;
    return (c->$first != 0) + copy.shas[0][0] + (c->deadline > 0);
}
PLANTED
out=$("$check" "$tmp/src" "$1" "$cc" 2>&1) && { echo "FAIL: direct accesses passed"; exit 1; }
for want in "planted.c:5: reads or changes hh__conn's field $first" \
    "planted.c:5: reads or changes hh__conn's field shas" "planted.c:5: reads or changes hh__conn's field deadline" \
    "3 direct access(es)"; do
    case "$out" in *"$want"*) ;; *) echo "FAIL: not said: $want; the check said: $out"; exit 1 ;; esac
done
case "$out" in *conn.c:*) echo "FAIL: conn.c, the owner, was refused: $out"; exit 1 ;; esac
cat > "$tmp/src/planted.c" <<PLANTED
#include "conn.h"
int hh__planted(const hh__conn *c);
int hh__planted(const hh__conn *c) { return hh__conn_version(c) + (hh__conn_deadline(c) > 0); }
PLANTED
"$check" "$tmp/src" "$1" "$cc" >/dev/null || { echo "FAIL: accesses through the accessors were refused"; exit 1; }
"$check" "$here/src" "$1" "$cc"
