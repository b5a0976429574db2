#!/usr/bin/env bash
# scripts/check_quick_tests.sh ROOT -- every concept folder of tests/integration
# keeps at least one test in `make check`: a test not named in HH_SLOW_TESTS
# (tests/CMakeLists.txt). Moving a folder's last quick test to the slow list
# would leave a change to that concept untested in the edit loop; this check
# refuses it, naming the folder. Every name in HH_SLOW_TESTS must also be a
# test file, so a renamed test does not silently turn quick.
#   --self-test   runs the check on a copied tree with a folder made all slow
#                 and with a stale name, and shows that both fail.
set -euo pipefail

check() {
    local root="$1" bad=0 dir name quick
    local slow
    slow="$(sed -n '/^set(HH_SLOW_TESTS/,/)/p' "$root/tests/CMakeLists.txt" |
        sed 's/set(HH_SLOW_TESTS//; s/)//' | tr -s ' \n' '\n\n' | sed '/^$/d')"
    [ -n "$slow" ] || { echo "check_quick_tests: no HH_SLOW_TESTS list in $root/tests/CMakeLists.txt"; return 1; }
    for dir in "$root"/tests/integration/*/; do
        compgen -G "${dir}test_*.sh" >/dev/null || continue # helpers only (handlers/)
        quick=0
        for f in "$dir"test_*.sh; do
            name="$(basename "$f" .sh)"
            grep -qx "$name" <<<"$slow" || { quick=1; break; }
        done
        if [ "$quick" = 0 ]; then
            echo "check_quick_tests: tests/integration/$(basename "$dir") has no test outside HH_SLOW_TESTS: make check would not cover it"
            bad=1
        fi
    done
    while read -r name; do
        compgen -G "$root/tests/integration/*/$name.sh" >/dev/null ||
            { echo "check_quick_tests: HH_SLOW_TESTS names $name, which is no tests/integration/*/$name.sh"; bad=1; }
    done <<<"$slow"
    return "$bad"
}

if [ "${1:-}" = --self-test ]; then
    tmp="$(mktemp -d)"
    trap 'rm -rf "$tmp"' EXIT
    mkdir -p "$tmp/tests/integration/a" "$tmp/tests/integration/b" "$tmp/tests/integration/helpers"
    : >"$tmp/tests/integration/helpers/job.sh"
    : >"$tmp/tests/integration/a/test_a1.sh"; : >"$tmp/tests/integration/a/test_a2.sh"
    : >"$tmp/tests/integration/b/test_b1.sh"
    printf 'x\nset(HH_SLOW_TESTS\n  test_a1)\ny\n' >"$tmp/tests/CMakeLists.txt"
    check "$tmp" >/dev/null || { echo "self-test: a tree with a quick test per folder was refused"; exit 1; }
    printf 'set(HH_SLOW_TESTS\n  test_a1\n  test_b1)\n' >"$tmp/tests/CMakeLists.txt"
    out="$(check "$tmp")" && { echo "self-test: a folder with only slow tests passed"; exit 1; }
    grep -q "integration/b has no test" <<<"$out" || { echo "self-test: the folder was not named: $out"; exit 1; }
    printf 'set(HH_SLOW_TESTS test_a1 test_gone)\n' >"$tmp/tests/CMakeLists.txt"
    out="$(check "$tmp")" && { echo "self-test: a stale name passed"; exit 1; }
    grep -q "names test_gone" <<<"$out" || { echo "self-test: the stale name was not named: $out"; exit 1; }
    echo "self-test: ok"
    exit 0
fi
check "${1:?usage: check_quick_tests.sh ROOT | --self-test}"
