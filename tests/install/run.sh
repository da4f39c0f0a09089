#!/usr/bin/env bash
# Usage: run.sh BUILD_DIR THIS_DIR CC "SANITIZER_FLAGS"
set -euo pipefail
build=$1; here=$2; cc=$3; san=${4:-}
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
prefix=$tmp/prefix

cmake --install "$build" --prefix "$prefix" >/dev/null
libdir=$(ls -d "$prefix"/lib* | head -n1)
test -f "$prefix/include/mcp/mcp.h"
test -f "$libdir/pkgconfig/libmcp.pc"
test -f "$libdir/cmake/mcp/mcpConfig.cmake"

# 1. pkg-config (module names "mcp" and "libmcp" are both installed)
export PKG_CONFIG_PATH=$libdir/pkgconfig
for mod in mcp libmcp; do
  # shellcheck disable=SC2046,SC2086
  $cc $san -o "$tmp/hello_pc" "$here/hello.c" $(pkg-config --cflags --libs $mod)
  LD_LIBRARY_PATH=$libdir "$tmp/hello_pc" | grep -q '^hello from libmcp'
done

# 2. CMake find_package(mcp)
cmake -S "$here/consumer" -B "$tmp/consumer" -DCMAKE_PREFIX_PATH="$prefix" \
      -DCMAKE_C_COMPILER="$cc" -DCMAKE_C_FLAGS="$san" -DCMAKE_EXE_LINKER_FLAGS="$san" >/dev/null
cmake --build "$tmp/consumer" >/dev/null
LD_LIBRARY_PATH=$libdir "$tmp/consumer/hello" | grep -q '^hello from libmcp'

# 3. The mcp command runs from the prefix (it finds libmcp beside it) and
#    has its man page.
"$prefix/bin/mcp" --version | grep -q '^mcp (libmcp) '
test -f "$prefix/share/man/man1/mcp.1"
echo "install: pkg-config and find_package consumers built and ran; mcp and mcp(1) installed"
