#!/usr/bin/env bash
# contrib/Containerfile installs what the build needs and what the binary loads: the build
# stage names the package of every pkg-config module CMakeLists.txt asks for (and OpenSSL's),
# the runtime stage the package of every shared library that hiredhand and libhiredhand name
# directly (NEEDED), libc aside. Packages are found with dpkg -S on this Debian machine, so a
# library added to the build without its package in the image fails here, not in a user's
# `podman build`. Skipped (with a note) without dpkg or pkg-config.
. "$(dirname "$0")/../../lib/harness.sh"
hh_require_binary
file="$HH_ROOT/contrib/Containerfile"
[ -r "$file" ] || fail "contrib/Containerfile is missing"
for tool in dpkg pkg-config readelf; do
    command -v "$tool" >/dev/null || { hh_log "NOTE: no $tool here: Containerfile packages not checked"; pass; }
done

# The apt-get install list of each stage (continuation lines joined).
stage_packages() {   # build|runtime
    awk -v want="$1" '
        /^FROM / { stage = ($0 ~ / AS build/) ? "build" : "runtime" }
        stage == want { line = line " " $0 }
        END { print line }' "$file" | tr -s ' \\' '\n\n' | sed -n '/^install$/,/^&&$/p'
}
build_pkgs="$(stage_packages build)"
runtime_pkgs="$(stage_packages runtime)"
[ -n "$build_pkgs" ] || fail "no apt-get install in the build stage"
[ -n "$runtime_pkgs" ] || fail "no apt-get install in the runtime stage"

owner() {   # PATH -> the Debian package that ships it (usrmerge: /lib and /usr/lib both tried)
    local p r
    r="$(realpath "$1")"
    for p in "$r" "${r#/usr}" "/usr$r"; do
        dpkg -S "$p" 2>/dev/null | head -n 1 | cut -d: -f1 && return 0
    done
    return 1
}

# build stage: every pkg-config module CMakeLists.txt checks, and OpenSSL (find_package)
modules="$(sed -n 's/^ *pkg_check_modules([A-Z_]* \(REQUIRED \)\{0,1\}IMPORTED_TARGET \([^)]*\)).*/\2/p' \
    "$HH_ROOT/CMakeLists.txt" | tr ' ' '\n' | sed 's/[<>=].*//' | grep .)"
[ -n "$modules" ] || fail "no pkg_check_modules found in CMakeLists.txt"
grep -q 'find_package(OpenSSL' "$HH_ROOT/CMakeLists.txt" && modules="$modules openssl"
checked=0
for m in $modules; do
    dir="$(pkg-config --variable=pcfiledir "$m" 2>/dev/null)" || continue   # optional and absent here
    pkg="$(owner "$dir/$m.pc")" || fail "no Debian package ships $dir/$m.pc"
    grep -qx "$pkg" <<<"$build_pkgs" || fail "the Containerfile's build stage does not install $pkg (pkg-config $m)"
    checked=$((checked + 1))
done
[ "$checked" -ge 5 ] || fail "only $checked pkg-config modules checked"

# runtime stage: the libraries the binary and the library load
lib="$(dirname "$HIREDHAND")/libhiredhand.so"
[ -f "$lib" ] || fail "no libhiredhand.so next to $HIREDHAND"
# (a sanitizer build's runtimes, libasan and the like, are not the image's)
needed="$(readelf -d "$HIREDHAND" "$lib" | sed -n 's/.*(NEEDED).*\[\(.*\)\]/\1/p' | sort -u |
    grep -vE '^lib(hiredhand|asan|ubsan|tsan|lsan)\.')"
checked=0
for so in $needed; do
    path="$(ldconfig -p | awk -v so="$so" '$1 == so { print $NF; exit }')"
    [ -n "$path" ] || fail "ldconfig does not know $so"
    pkg="$(owner "$path")" || fail "no Debian package ships $path"
    [ "$pkg" = libc6 ] && continue
    grep -qx "$pkg" <<<"$runtime_pkgs" || fail "the Containerfile's runtime stage does not install $pkg ($so)"
    checked=$((checked + 1))
done
[ "$checked" -ge 4 ] || fail "only $checked shared libraries checked"
pass "every build module and runtime library has its package in contrib/Containerfile"
