#!/usr/bin/env bash
# test_install.sh BUILD_DIR VERSION [SANITIZE] -- installs the build into a
# temporary prefix (cmake --install --prefix) and builds tiny consumer
# programs against it: one with find_package(hiredhand) for every imported
# target the package exports (hiredhand::hiredhand, hiredhand::hiredhand_static,
# and any added later), each in its own project so a dependency the package
# config forgets to find fails to configure; one with pkg-config. Each must
# print the library's hh_version(), as must the installed `hiredhand --version`.
set -euo pipefail
build=$(cd "$1" && pwd) version=$2 sanitize=${3:-0}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
prefix=$tmp/prefix
cmake --install "$build" --prefix "$prefix" >"$tmp/install.log"
flags=""
[ "$sanitize" = 1 ] || [ "$sanitize" = ON ] && flags="-fsanitize=address,undefined"

mkdir -p "$tmp/consumer"
cat >"$tmp/consumer/main.c" <<'C'
#include <stdio.h>
#include <hiredhand.h>
int main(void) {
    /* compiled against the installed header, run with the installed library */
    if (HH_VERSION_NUM != ((HH_VERSION_MAJOR << 16) | (HH_VERSION_MINOR << 8) | HH_VERSION_PATCH)) return 1;
    printf("%s\n", hh_version());
    return 0;
}
C
# Every target the installed export file defines, read from the file itself
# so a target added later is covered without editing this test.
targets=$(sed -n 's/^add_library(\(hiredhand::[A-Za-z0-9_]*\) .*/\1/p' "$prefix"/lib*/cmake/hiredhand/hiredhandTargets.cmake)
[ -n "$targets" ] || { echo "no imported targets in the installed hiredhandTargets.cmake" >&2; exit 1; }
for target in $targets; do
    dir=$tmp/consumer-${target#hiredhand::}
    mkdir -p "$dir"
    cat >"$dir/CMakeLists.txt" <<CM
cmake_minimum_required(VERSION 3.18)
project(consumer C)
find_package(hiredhand 0.1 REQUIRED)
add_executable(consumer $tmp/consumer/main.c)
target_link_libraries(consumer PRIVATE $target)
CM
    cmake -S "$dir" -B "$dir/build" -DCMAKE_PREFIX_PATH="$prefix" \
        -DCMAKE_C_FLAGS="$flags" -DCMAKE_EXE_LINKER_FLAGS="$flags" >"$tmp/cmake.log" 2>&1 ||
        { cat "$tmp/cmake.log" >&2; echo "find_package(hiredhand) with $target failed to configure" >&2; exit 1; }
    cmake --build "$dir/build" >"$tmp/build.log" 2>&1 ||
        { cat "$tmp/build.log" >&2; echo "consumer of $target failed to build" >&2; exit 1; }
    got=$("$dir/build/consumer")
    [ "$got" = "$version" ] || { echo "$target consumer printed '$got', want '$version'" >&2; exit 1; }
    echo "ok: find_package(hiredhand) consumer of $target prints $got"
done
case " $(echo $targets) " in
*" hiredhand::hiredhand "*) ;;
*) echo "the package exports no hiredhand::hiredhand" >&2; exit 1 ;;
esac
case " $(echo $targets) " in
*" hiredhand::hiredhand_static "*) ;;
*) echo "the package exports no hiredhand::hiredhand_static" >&2; exit 1 ;;
esac

pc=$(find "$prefix" -name hiredhand.pc | head -1)
[ -n "$pc" ] || { echo "no hiredhand.pc installed" >&2; exit 1; }
export PKG_CONFIG_PATH=$(dirname "$pc")
[ "$(pkg-config --modversion hiredhand)" = "$version" ] || { echo "pkg-config --modversion is not $version" >&2; exit 1; }
libdir=$(pkg-config --variable=libdir hiredhand)
# shellcheck disable=SC2046,SC2086
cc $flags -o "$tmp/pc_consumer" "$tmp/consumer/main.c" $(pkg-config --cflags --libs hiredhand) -Wl,-rpath,"$libdir"
got=$("$tmp/pc_consumer")
[ "$got" = "$version" ] || { echo "pkg-config consumer printed '$got', want '$version'" >&2; exit 1; }
echo "ok: pkg-config consumer prints $got"

got=$("$prefix/bin/hiredhand" --version)
[ "$got" = "hiredhand $version" ] || { echo "installed hiredhand --version printed '$got'" >&2; exit 1; }
echo "ok: installed hiredhand --version prints $got"
