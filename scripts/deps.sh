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
pkgs=(cmake make gcc clang pkg-config libhiredis-dev libjansson-dev libmicrohttpd-dev libsystemd-dev libyaml-dev zlib1g-dev libssl-dev libglib2.0-dev tzdata
      redis-server redis-tools redis-sentinel)
if [ "$what" = test ] || [ "$what" = bench ]; then
  pkgs+=(libcmocka-dev ruby ruby-sidekiq ruby-rack ruby-webrick curl jq iproute2 chromium procps locales openssl
        libclang-rt-14-dev cppcheck clang-format python3 nodejs ruby-activejob groff-base
        ruby-sidekiq-cron ruby-raabro ruby-thor ruby-concurrent ruby-tzinfo)
        # locales: the decimal-comma test; libFuzzer for `make fuzz`; cppcheck and clang-format
        # for `make lint`; python3, nodejs: the --serve reference handlers; ruby-activejob: Rails
        # 6.1 pushing Active Job jobs through the Sidekiq adapter; ruby-sidekiq-cron (1.8, for
        # Sidekiq 6.4) and what the Sidekiq 7.3/8.1 peers' sidekiq-cron, fugit and
        # sidekiq-unique-jobs load: raabro, thor, concurrent-ruby, tzinfo
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
# A line per step (not -qq into /dev/null): installing takes minutes and a
# silent terminal looks hung.
echo "deps: apt-get update" >&2
$SUDO apt-get update -q
echo "deps: apt-get install" >&2
$SUDO apt-get install -y -q -o Dpkg::Progress-Fancy=0 --no-install-recommends "${missing[@]}"
echo "deps: done" >&2
