#!/usr/bin/env bash
# scripts/deps.sh -- installs the Debian packages hiredhand needs to build,
# test and demo, when any is missing. Needs root (or sudo) for apt-get.
#   scripts/deps.sh build   compilers and libraries
#   scripts/deps.sh test    + redis-server, Ruby Sidekiq 6.4, curl, chromium, locales
#                           (localedef: a decimal-comma locale for tests/unit/test_locale.c)
#   scripts/deps.sh bench   test's + Go and the two libraries gocraft/work needs, for the
#                           gocraft/work row of `make bench` (built offline in GOPATH mode)
set -euo pipefail
what="${1:-test}"
pkgs=(cmake make gcc clang pkg-config libhiredis-dev libjansson-dev libmicrohttpd-dev zlib1g-dev
      redis-server redis-tools)
if [ "$what" = test ] || [ "$what" = bench ]; then
  pkgs+=(libcmocka-dev ruby ruby-sidekiq ruby-rack ruby-webrick curl jq iproute2 chromium procps locales
        libclang-rt-14-dev)  # locales: the decimal-comma test; libFuzzer for `make fuzz`
fi
if [ "$what" = bench ]; then
  pkgs+=(golang-go golang-github-gomodule-redigo-dev golang-github-robfig-cron-dev)
fi
if [ "$what" = demo ]; then
  pkgs+=(ruby ruby-sidekiq)
fi
missing=()
for p in "${pkgs[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
[ ${#missing[@]} -eq 0 ] && exit 0
echo "deps: installing ${missing[*]}" >&2
SUDO=""
if [ "$(id -u)" -ne 0 ]; then
  command -v sudo >/dev/null || { echo "deps: run as root, or install: ${missing[*]}" >&2; exit 1; }
  SUDO=sudo
fi
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -qq
$SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
