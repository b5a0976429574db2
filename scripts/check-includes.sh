#!/bin/sh
# check-includes.sh -- fails when the files of src/ and cli/ include each
# other in a circle. A module is a .c file and the .h of the same name
# (manager.c + manager.h); module A depends on B when a file of A has
# #include "B.h". A circle (manager -> heartbeat -> manager) means neither
# side can be read, tested or changed without the other; see
# docs/design.md for the layering.
# Usage: scripts/check-includes.sh [ROOT]
# ROOT: the repository, default the script's parent. There is no list of
# tolerated edges: a file that needs something from above gets a narrow
# view or a callback defined in its own header instead. Exit 0 no circle,
# 1 circles, 2 usage error.
set -eu
case "${1:-}" in -*) echo "usage: check-includes.sh [ROOT]" >&2; exit 2 ;; esac
root=${1:-$(cd "$(dirname "$0")/.." && pwd)}
[ -d "$root/src" ] || { echo "check-includes: no src/ under $root" >&2; exit 2; }
edges=$(mktemp)
trap 'rm -f "$edges"' EXIT
for dir in src cli; do
    [ -d "$root/$dir" ] || continue
    for f in "$root/$dir"/*.c "$root/$dir"/*.h; do
        [ -e "$f" ] || continue
        from="$dir/$(basename "$f" | sed 's/\.[ch]$//')"
        sed -n 's/^[[:space:]]*#[[:space:]]*include[[:space:]]*"\([^"]*\)\.h".*/\1/p' "$f" |
        while read -r inc; do
            # the header of this directory, else of the other; else outside
            # (include/hiredhand.h, system headers): not a node
            if [ -e "$root/$dir/$inc.h" ]; then to="$dir/$inc"
            elif [ -e "$root/src/$inc.h" ]; then to="src/$inc"
            elif [ -e "$root/cli/$inc.h" ]; then to="cli/$inc"
            else continue; fi
            [ "$to" = "$from" ] || echo "$from $to"
        done
    done
done | sort -u > "$edges"
# Depth-first search for back edges; awk keeps it to POSIX tools.
awk '
{ adj[$1] = adj[$1] " " $2; nodes[$1] = 1; nodes[$2] = 1 }
function visit(n,    i, k, parts, m, j, cyc) {
    state[n] = 1; stack[++depth] = n
    k = split(adj[n], parts, " ")
    for (i = 1; i <= k; i++) {
        m = parts[i]
        if (state[m] == 1) {
            cyc = ""
            for (j = depth; j >= 1; j--) { cyc = stack[j] (cyc == "" ? "" : " -> ") cyc; if (stack[j] == m) break }
            print "include circle: " cyc " -> " m; found++
        } else if (state[m] == 0) visit(m)
    }
    depth--; state[n] = 2
}
END {
    for (n in nodes) if (state[n] == 0) visit(n)
    if (found) { printf "%d include circle(s) in src/ and cli/\n", found; exit 1 }
    print "no include circle in src/ and cli/"
}' "$edges"
