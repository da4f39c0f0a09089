#!/usr/bin/env bash
# Installs what a build needs, and only what is missing.
#
#   scripts/install-deps.sh build   compiler, CMake and the library dependencies
#   scripts/install-deps.sh check   build + test tools (cmocka, clang-14 for fuzzing,
#                                   Node.js peers from tests/interop/package-lock.json)
#   scripts/install-deps.sh bench   check + wrk
#
# Debian packages are installed with apt-get when running as root; otherwise
# the script names the missing packages and the command to install them, and
# fails. npm packages are pinned by the lockfiles and installed with `npm ci`.
set -euo pipefail
cd "$(dirname "$0")/.."

what=${1:-build}

build_pkgs=(build-essential cmake pkg-config libjansson-dev libmicrohttpd-dev
            libcurl4-openssl-dev nettle-dev libyaml-dev)
# libssl-dev: the HTTPS client tests make their certificates with OpenSSL.
check_pkgs=(libcmocka-dev libssl-dev clang-14 libclang-rt-14-dev openssl curl nodejs npm)
bench_pkgs=(wrk)

want=("${build_pkgs[@]}")
case "$what" in
  build) ;;
  check) want+=("${check_pkgs[@]}") ;;
  bench) want+=("${check_pkgs[@]}" "${bench_pkgs[@]}") ;;
  *) echo "usage: $0 build|check|bench" >&2; exit 2 ;;
esac

missing=()
for p in "${want[@]}"; do
  # nodejs/npm: any working node >= 18 on PATH will do (the machine image
  # ships one outside dpkg).
  if [[ $p == nodejs ]] && command -v node >/dev/null 2>&1; then continue; fi
  if [[ $p == npm ]] && command -v npm >/dev/null 2>&1; then continue; fi
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done

if ((${#missing[@]})); then
  if [[ $(id -u) -eq 0 ]]; then
    echo "install-deps: installing ${missing[*]}"
    export DEBIAN_FRONTEND=noninteractive
    apt-get update -qq
    apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
  else
    echo "install-deps: missing Debian packages: ${missing[*]}" >&2
    echo "install-deps: run: sudo apt-get install ${missing[*]}" >&2
    exit 1
  fi
fi

# Node.js peers for interop and conformance tests (check and bench only).
npm_install() {
  local dir=$1
  [[ -f $dir/package-lock.json ]] || return 0
  local stamp=$dir/node_modules/.libmcp-lock-stamp
  if [[ ! -f $stamp ]] || ! cmp -s "$dir/package-lock.json" "$stamp"; then
    echo "install-deps: npm ci in $dir"
    # A registry download can stall without failing: bound each attempt
    # and try again rather than hang the build.
    local attempt
    for attempt in 1 2 3; do
      if (cd "$dir" && timeout 600 npm ci --no-audit --no-fund --loglevel=error); then
        cp "$dir/package-lock.json" "$stamp"
        return 0
      fi
      echo "install-deps: npm ci in $dir failed (attempt $attempt of 3)" >&2
    done
    return 1
  fi
}
if [[ $what != build ]]; then
  npm_install tests/interop
fi
if [[ $what == bench ]]; then
  npm_install bench/peers
fi
exit 0
