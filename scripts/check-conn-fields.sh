#!/bin/sh
# check-conn-fields.sh -- fails when a library file other than conn.c and
# redis.c reads or changes a field of hh__conn (src/conn.h) directly. The
# fields belong to those two files (conn.c opens, reads and closes a
# connection; redis.c reconnects, classifies errors, runs pipelines and
# scripts on it); every other file goes through the hh__conn_* accessors
# and the calls of redis.h, so what a connection's state means is decided
# in one place. The compiler does the looking, so only accesses to an
# hh__conn are caught, not the many other structs with a `name`, `cfg` or
# `ctx`: the sources are copied into a temporary folder, where conn.h's
# hh__conn has every field renamed (the list is read from the struct's
# definition, so a new field is covered at once) and its inline accessors
# (which name their connection `c`) follow the rename; then every other
# src/*.c is compiled with -fsyntax-only, and each "no member named F"
# error on an hh__conn is an access, printed as file:line: field. The
# headers those files include are checked with them.
# Usage: scripts/check-conn-fields.sh SRCDIR OBJDIR [CC]
# SRCDIR: the library's sources (src); OBJDIR: the hiredhand_obj target's
# folder of a CMake (Unix Makefiles) build, whose flags.make gives the
# include folders and definitions (build/CMakeFiles/hiredhand_obj.dir).
# Exit 0 no access, 1 accesses, 2 usage error or a file that does not
# compile for another reason (shown).
set -eu
OWNERS="conn.c redis.c"
[ $# -ge 2 ] || { echo "usage: check-conn-fields.sh SRCDIR OBJDIR [CC]" >&2; exit 2; }
src=$1 flags=$2/flags.make cc=${3:-cc}
[ -f "$src/conn.h" ] || { echo "check-conn-fields: no $src/conn.h" >&2; exit 2; }
[ -f "$flags" ] || { echo "check-conn-fields: no $flags (a CMake Unix Makefiles build)" >&2; exit 2; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
mkdir "$tmp/src"
cp "$src"/*.c "$src"/*.h "$tmp/src/"

# The field names: the declarators between "typedef struct hh__conn {" and
# "} hh__conn;", comments dropped (a field's name is the last identifier
# of its declaration, before any [size]).
fields=$(awk '
/^typedef struct hh__conn \{/ { body = 1; next }
body && /^\} hh__conn;/ { body = 0; done = 1 }
body { text = text " " $0 }
END {
    if (!done) exit 1
    while ((i = index(text, "/*")) > 0) {
        j = index(substr(text, i + 2), "*/"); if (j == 0) exit 1
        text = substr(text, 1, i - 1) " " substr(text, i + j + 3)
    }
    n = split(text, decl, ";")
    for (k = 1; k < n; k++) {
        d = decl[k]; gsub(/\[[^]]*\]/, "", d); gsub(/[ \t]+$/, "", d)
        if (match(d, /\(\*[ \t]*[A-Za-z_][A-Za-z0-9_]*\)/)) d = substr(d, RSTART + 2, RLENGTH - 3)
        if (match(d, /[A-Za-z_][A-Za-z0-9_]*$/)) print substr(d, RSTART, RLENGTH)
    }
}' "$src/conn.h") || { echo "check-conn-fields: no 'typedef struct hh__conn {' ... '} hh__conn;' in $src/conn.h" >&2; exit 2; }
[ -n "$fields" ] || { echo "check-conn-fields: no field found in hh__conn" >&2; exit 2; }

# conn.h with the fields renamed: in the struct, every whole-word use (the
# declarators, and harmlessly the comments); after it, c->FIELD.
awk -v list="$(echo $fields)" '
BEGIN { n = split(list, f, " ") }
function rename(s, pre,    k, out, rest) {
    for (k = 1; k <= n; k++) {
        out = ""; rest = s
        while (match(rest, pre f[k] "([^A-Za-z0-9_]|$)")) {
            if (RSTART > 1 && substr(rest, RSTART - 1, 1) ~ /[A-Za-z0-9_]/) {
                out = out substr(rest, 1, RSTART + RLENGTH - 2); rest = substr(rest, RSTART + RLENGTH - 1); continue
            }
            out = out substr(rest, 1, RSTART - 1) pre f[k] "__conn_private"
            rest = substr(rest, RSTART + length(pre) + length(f[k]))
        }
        s = out rest
    }
    return s
}
/^typedef struct hh__conn \{/ { body = 1; print; next }
body && /^\} hh__conn;/ { body = 0; after = 1; print; next }
body { print rename($0, ""); next }
after { print rename($0, "c->"); next }
{ print }' "$src/conn.h" > "$tmp/src/conn.h"

defs=$(sed -n 's/^C_DEFINES = //p' "$flags")
incs=$(sed -n 's/^C_INCLUDES = //p' "$flags")
std=$(sed -n 's/^C_FLAGS = .*\(-std=[a-z0-9]*\).*/\1/p' "$flags")
found=0
for f in "$tmp"/src/*.c; do
    b=${f##*/}
    case " $OWNERS " in *" $b "*) continue ;; esac
    # shellcheck disable=SC2086 # the flags are words
    if LC_ALL=C "$cc" -fsyntax-only -w ${std:-} $defs -I"$tmp/src" $incs "$f" > "$tmp/out" 2>&1; then continue; fi
    # gcc: "'hh__conn' {aka 'struct hh__conn'} has no member named 'x'";
    # clang: "no member named 'x' in 'struct hh__conn'"
    hits=$(grep -E "error: .*(hh__conn'? .*has no member named|no member named .* in '(struct )?hh__conn')" "$tmp/out" || true)
    if [ -z "$hits" ]; then
        echo "check-conn-fields: $b does not compile with the renamed fields:" >&2
        head -n 20 "$tmp/out" >&2
        exit 2
    fi
    echo "$hits" | sed -e "s|^$tmp/src/|$src/|" -e "s|^\([^:]*:[0-9]*\):[0-9]*: error: .*member named '\([A-Za-z0-9_]*\)'.*|\1: reads or changes hh__conn's field \2|"
    found=$((found + $(echo "$hits" | wc -l)))
done
if [ "$found" -gt 0 ]; then
    echo "$found direct access(es) to hh__conn's fields outside $OWNERS: use the hh__conn_* accessors of conn.h"
    exit 1
fi
echo "no access to hh__conn's fields outside $OWNERS"
