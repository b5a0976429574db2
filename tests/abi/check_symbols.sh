#!/usr/bin/env bash
# check_symbols.sh LIB HEADER -- the shared library exports exactly the
# functions HEADER declares HH_EXPORT: no internal function leaks out (an
# embedder could start to depend on it) and none of the API is missing.
# Fails listing the extra and the missing names.
set -euo pipefail
lib=$1 header=$2
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

# Declared: the name before the first '(' of each HH_EXPORT declaration
# (declarations may span lines: join up to the ';').
awk '/^HH_EXPORT/ { d = ""; on = 1 } on { d = d " " $0; if (index($0, ";") || index($0, "__attribute__")) { on = 0;
       sub(/\(.*/, "", d); n = split(d, w, /[^A-Za-z0-9_]+/); while (n > 0 && w[n] == "") n--; print w[n] } }' \
    "$header" | sort -u >"$tmp/declared"
# Exported: every defined dynamic symbol but the ones the linker or the
# sanitizers' instrumentation add on their own.
nm -D --defined-only "$lib" | awk '{ print $NF }' |
    grep -Ev '^(_init|_fini|_edata|_end|__bss_start|__end__|_ITM_.*|__gmon_start__|__(asan|ubsan|odr_asan|sancov|lsan|tsan)[._].*)$' |
    sed 's/@.*//' | sort -u >"$tmp/exported"

if [ ! -s "$tmp/declared" ]; then echo "no HH_EXPORT declaration found in $header" >&2; exit 1; fi
extra=$(comm -13 "$tmp/declared" "$tmp/exported")
missing=$(comm -23 "$tmp/declared" "$tmp/exported")
if [ -n "$extra" ] || [ -n "$missing" ]; then
    [ -n "$extra" ] && printf 'exported but not declared HH_EXPORT in %s:\n%s\n' "$header" "$extra" >&2
    [ -n "$missing" ] && printf 'declared HH_EXPORT but not exported by %s:\n%s\n' "$lib" "$missing" >&2
    exit 1
fi
echo "ok: $(wc -l <"$tmp/exported") symbols, as declared"
