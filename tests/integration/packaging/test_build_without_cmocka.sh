#!/usr/bin/env bash
# `make demo` on a fresh Debian 12 machine installs only the demo's packages (no cmocka, a
# test-only package). The build must configure and produce the hiredhand binary with only their
# pkg-config files: PKG_CONFIG_LIBDIR points at a folder holding the .pc files of hiredis, jansson,
# zlib, libmicrohttpd, yaml-0.1, libsystemd and glib-2.0 and of what they require (gnutls... which their -dev packages pull in),
# and nothing else. Checks:
#   - default configure (HH_TESTS=AUTO) succeeds, says the tests are left out, and no test target
#     exists; `cmake --build --target hiredhand` produces a binary that runs (`version`)
#   - -DHH_TESTS=ON with the same folder fails at configure time naming cmocka (make test's way)
#   - with the system's .pc files (cmocka present), AUTO configures the unit tests
. "$(dirname "$0")/../../lib/harness.sh"
command -v cmake >/dev/null || fail "cmake is not installed"
command -v pkg-config >/dev/null || fail "pkg-config is not installed"
sysdirs="$(pkg-config --variable pc_path pkg-config)"

find_pc() {   # NAME -> path of NAME.pc in the system's pkg-config path
    local d
    IFS=: read -r -a dirs <<<"$sysdirs"
    for d in "${dirs[@]}"; do [ -f "$d/$1.pc" ] && { echo "$d/$1.pc"; return 0; }; done
    return 1
}

pcdir="$(hh_tmp)"
todo=(hiredis jansson zlib libmicrohttpd yaml-0.1 libsystemd glib-2.0)
while [ ${#todo[@]} -gt 0 ]; do
    m="${todo[0]}"; todo=("${todo[@]:1}")
    [ -f "$pcdir/$m.pc" ] && continue
    f="$(find_pc "$m")" || fail "no $m.pc on this machine (is its -dev package installed?)"
    cp "$f" "$pcdir/"
    for r in $(pkg-config --print-requires --print-requires-private "$m" | awk '{print $1}'); do
        todo+=("$r")
    done
done
[ ! -f "$pcdir/cmocka.pc" ] || fail "cmocka.pc got into the demo's pkg-config folder"
PKG_CONFIG_LIBDIR="$pcdir" pkg-config --exists cmocka && fail "cmocka is still visible through PKG_CONFIG_LIBDIR=$pcdir"
hh_log "pkg-config folder with only the demo's packages: $(ls "$pcdir" | tr '\n' ' ')"

b="$(hh_tmp)/build"
PKG_CONFIG_LIBDIR="$pcdir" cmake -S "$HH_ROOT" -B "$b" -DCMAKE_BUILD_TYPE=RelWithDebInfo >"$HH_TMP/configure.log" 2>&1 \
    || { cat "$HH_TMP/configure.log" >&2; fail "cmake configure failed without cmocka"; }
assert_contains "$(cat "$HH_TMP/configure.log")" "cmocka not found: tests not configured" "configure says the tests are left out"
grep -q "test_retry" "$b/Makefile" "$b/tests/Makefile" 2>/dev/null && fail "unit test targets configured without cmocka"
PKG_CONFIG_LIBDIR="$pcdir" cmake --build "$b" -j 2 --target hiredhand >"$HH_TMP/build.log" 2>&1 \
    || { tail -n 30 "$HH_TMP/build.log" >&2; fail "building hiredhand without cmocka failed"; }
[ -x "$b/hiredhand" ] || fail "no hiredhand binary in $b"
assert_contains "$("$b/hiredhand" version)" "hiredhand " "the built binary runs"

b2="$(hh_tmp)/build-on"
if PKG_CONFIG_LIBDIR="$pcdir" cmake -S "$HH_ROOT" -B "$b2" -DHH_TESTS=ON >"$HH_TMP/configure-on.log" 2>&1; then
    fail "-DHH_TESTS=ON configured without cmocka (make test must require it)"
fi
assert_contains "$(cat "$HH_TMP/configure-on.log")" "cmocka" "-DHH_TESTS=ON names the missing cmocka"

b3="$(hh_tmp)/build-auto"
cmake -S "$HH_ROOT" -B "$b3" >"$HH_TMP/configure-auto.log" 2>&1 \
    || { cat "$HH_TMP/configure-auto.log" >&2; fail "configure with the system's packages failed"; }
grep -q "test_retry" "$b3/tests/Makefile" || fail "with cmocka installed, AUTO did not configure the unit tests"
pass "configures and builds hiredhand with only the demo's packages; tests need cmocka only when asked"
