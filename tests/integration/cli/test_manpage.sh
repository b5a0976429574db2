#!/usr/bin/env bash
# hiredhand(1): the build makes it beside the binary from the binary's own --help; it renders
# with man/groff, names every long option `hiredhand work --help` prints and every command of
# `hiredhand --help`, and `make install` (cmake --install) puts it in share/man/man1. Also -V
# prints the version, as `hiredhand version` does.
. "$(dirname "$0")/../../lib/harness.sh"
hh_require_binary
build="$(dirname "$HIREDHAND")"
page="$build/hiredhand.1"
[ -s "$page" ] || fail "no man page $page beside the binary (the build makes it)"
command -v groff >/dev/null || fail "groff is needed to render the man page"
text="$(groff -man -Tascii -ww "$page" 2>"$HH_TMP/groff.err" | sed 's/.\x08//g')"
[ -s "$HH_TMP/groff.err" ] && fail "groff warns on $page: $(cat "$HH_TMP/groff.err")"
assert_contains "$text" "hiredhand - Sidekiq-compatible" "NAME section"
opts="$("$HIREDHAND" work --help | grep -o -- '--[a-z][a-z-]*' | sort -u)"
[ "$(wc -l <<<"$opts")" -gt 30 ] || fail "work --help printed too few long options: $opts"
for o in $opts; do
    grep -q -- "$o" <<<"$text" || fail "the man page does not mention $o (from hiredhand work --help)"
done
for c in $("$HIREDHAND" --help | awk '/^commands:/ { on = 1; next } on && /^  [a-z]/ { print $1 } /^$/ { on = 0 }'); do
    grep -qE "^       $c( |$)" <<<"$text" || fail "the man page has no entry for the command $c"
done
# make install: the page lands in share/man/man1 of the prefix
if [ -f "$build/cmake_install.cmake" ]; then
    prefix="$HH_TMP/prefix"
    cmake --install "$build" --prefix "$prefix" >"$HH_TMP/install.log" 2>&1 || fail "cmake --install failed: $(tail -5 "$HH_TMP/install.log")"
    cmp -s "$page" "$prefix/share/man/man1/hiredhand.1" || fail "cmake --install did not install hiredhand.1 in share/man/man1"
fi
# the defaults --help states are the library's: a numeric entry of the option table writes
# "(default {default})", which --help fills from hh_manager_options_init, never a figure of its own
# (a default that is a rule, "5 x processes", stays words)
help="$("$HIREDHAND" work --help)"
assert_not_contains "$help" "{default}" "work --help leaves no default unfilled"
assert_contains "$help" "dead set age limit (default 15552000)" "a filled default prints as an integer"
literal="$(grep -nE '^ *WO_(SECONDS|INT|LONG)\(.*\(default [0-9.]+[;)]' "$HH_ROOT/cli/work.c" || true)"
assert_eq "$literal" "" "numeric options of cli/work.c state their default through {default}"
hh_cli -V
assert_eq "$HH_RC" 0 "hiredhand -V exit status"
v="$HH_OUT"
hh_cli version
assert_eq "$v" "$HH_OUT" "hiredhand -V prints what hiredhand version does"
pass
