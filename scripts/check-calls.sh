#!/bin/sh
# check-calls.sh -- fails when the files of the library call each other in
# a circle. check-includes.sh sees #include lines only: a file can still
# call a function of a file above it through a prototype of the public
# header (heartbeat.c calling hh_manager_stop) and close a circle no include
# shows. This check reads what the compiler left instead: the symbol table
# of each object file (nm). A module is one object (abi.c.o is "abi");
# module A calls B when A leaves a symbol undefined (U) that B defines
# (T, D, B, R ...: any global symbol). A circle (heartbeat -> manager ->
# heartbeat) means neither side can be read, tested or changed without the
# other; see docs/design.md for the layering. Calls made through function
# pointers (callbacks) leave no symbol and are not seen, which is the point:
# a lower file that must reach a higher one takes a callback.
# Usage: scripts/check-calls.sh OBJDIR|OBJ...
# OBJDIR: searched for *.o (build/CMakeFiles/hiredhand_obj.dir). Every
# circle is printed as its strongly connected component, then each edge
# inside it with the symbols that make it. There is no list of tolerated
# edges. Exit 0 no circle, 1 circles, 2 usage error.
set -eu
case "${1:-}" in ""|-*) echo "usage: check-calls.sh OBJDIR|OBJ..." >&2; exit 2 ;; esac
objs=$(mktemp)
syms=$(mktemp)
trap 'rm -f "$objs" "$syms"' EXIT
for a in "$@"; do
    if [ -d "$a" ]; then find "$a" -name '*.o' -type f
    elif [ -f "$a" ]; then echo "$a"
    else echo "check-calls: no such file or directory: $a" >&2; exit 2; fi
done | sort -u > "$objs"
[ -s "$objs" ] || { echo "check-calls: no object file in $*" >&2; exit 2; }
# One line per global symbol: "module D|U name". nm -P -A prints
# "file: name type value size"; lowercase types are local to their file.
tr '\n' '\0' < "$objs" | xargs -0 nm -P -A | awk '
{
    i = index($0, ": "); f = substr($0, 1, i - 1); split(substr($0, i + 2), p, " ")
    sub(/.*\//, "", f); sub(/\.o$/, "", f); sub(/\.c$/, "", f)
    if (p[2] == "U") print f, "U", p[1]
    else if (p[2] ~ /^[ABCDGRSTVW]$/) print f, "D", p[1]
}' > "$syms"
# Tarjan's strongly connected components; awk keeps it to POSIX tools.
awk '
$2 == "D" { if (!($3 in owner)) owner[$3] = $1; nodes[$1] = 1; next }
$2 == "U" { use[++nu] = $1 " " $3; nodes[$1] = 1 }
END {
    for (i = 1; i <= nu; i++) {
        split(use[i], p, " ")
        if (!(p[2] in owner) || owner[p[2]] == p[1]) continue
        e = p[1] SUBSEP owner[p[2]]
        if (!(e in via)) { adj[p[1]] = adj[p[1]] " " owner[p[2]]; via[e] = p[2] }
        else via[e] = via[e] ", " p[2]
    }
    for (n in nodes) if (!(n in index_)) strong(n)
    if (found) { printf "%d call circle(s) among the library objects\n", found; exit 1 }
    print "no call circle among the library objects"
}
function strong(v,    k, parts, i, w, comp, size, members) {
    index_[v] = low[v] = ++counter; stack[++sp] = v; onstack[v] = 1
    k = split(adj[v], parts, " ")
    for (i = 1; i <= k; i++) {
        w = parts[i]
        if (!(w in index_)) { strong(w); if (low[w] < low[v]) low[v] = low[w] }
        else if (onstack[w] && index_[w] < low[v]) low[v] = index_[w]
    }
    if (low[v] != index_[v]) return
    size = 0; comp = ""
    do { w = stack[sp--]; onstack[w] = 0; members[w] = 1; comp = w (comp == "" ? "" : " ") comp; size++ } while (w != v)
    if (size < 2) return
    found++
    print "call circle: " comp
    for (e in via) {
        split(e, p, SUBSEP)
        if ((p[1] in members) && (p[2] in members)) print "  " p[1] " -> " p[2] ": " via[e]
    }
}' "$syms"
