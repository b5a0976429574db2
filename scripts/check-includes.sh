#!/bin/sh
# check-includes.sh -- fails when the files of src/ and cli/ include each
# other in a circle. A module is a .c file and the .h of the same name
# (manager.c + manager.h); module A depends on B when a file of A has
# #include "B.h". A circle (manager -> heartbeat -> manager) means neither
# side can be read, tested or changed without the other; see
# docs/design.md for the layering.
# Usage: scripts/check-includes.sh [--known FILE] [ROOT]
# ROOT: the repository, default the script's parent. With --known, the
# include edges listed in FILE (one a line, "src/fetch src/manager": fetch
# includes manager.h; # comments) are known to point back up and are left
# out of the graph, so only circles they close are tolerated: any circle
# without one fails, and the list can only shrink (an edge listed that no
# longer exists is reported as stale). Exit 0 no circle, 1 circles,
# 2 usage error.
set -eu
known=/dev/null
if [ "${1:-}" = "--known" ]; then
    [ $# -ge 2 ] || { echo "check-includes: --known needs a file" >&2; exit 2; }
    known=$2
    shift 2
fi
[ -r "$known" ] || { echo "check-includes: cannot read $known" >&2; exit 2; }
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
# Known back edges: reported, then dropped from the graph.
grep -v '^[[:space:]]*\(#\|$\)' "$known" | while read -r from to; do
    if grep -qx "$from $to" "$edges"; then echo "known back edge (to be removed): $from -> $to"
    else echo "stale entry in $known (edge gone, delete the line): $from -> $to"; fi
done
grep -v '^[[:space:]]*\(#\|$\)' "$known" | awk '{print $1 " " $2}' | sort -u > "$edges.known"
comm -23 "$edges" "$edges.known" > "$edges.left"
mv "$edges.left" "$edges"
rm -f "$edges.known"
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
