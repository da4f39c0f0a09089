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

# 2. One side each: a server built with libmcp-server and a client built with
#    libmcp-client talk over stdio. No library links the HTTP libraries
#    (the HTTP transports load them on first use), and the two programs,
#    which speak stdio only, check that they have not loaded them.
for side in server client; do
  test -f "$libdir/pkgconfig/libmcp-$side.pc"
  # shellcheck disable=SC2046
  $cc $san -o "$tmp/hello_$side" "$here/hello_$side.c" $(pkg-config --cflags --libs libmcp-$side)
done
needed() { readelf -d "$1" | sed -n 's/.*(NEEDED).*\[\(.*\)\]/\1/p'; }
needed "$libdir/libmcp-server.so" | grep -q '^libnettle'
for lib in mcp mcp-server mcp-client; do
  if needed "$libdir/lib$lib.so" | grep -Eq '^lib(microhttpd|curl)'; then
    echo "install: lib$lib.so links an HTTP library instead of loading it" >&2; exit 1
  fi
done
if needed "$libdir/libmcp-client.so" | grep -q '^libnettle'; then
  echo "install: libmcp-client.so needs the server's libraries" >&2; exit 1
fi
LD_LIBRARY_PATH=$libdir "$tmp/hello_client" "$tmp/hello_server" |
  grep -qx 'hello across the libraries'

#    Every function a public header declares is exported by each library
#    that offers that header's side: the server's headers by libmcp-server,
#    the client's by libmcp-client, the rest by both, and all by libmcp.
inc=$prefix/include/mcp
declared() { grep -ho '^MCP_API [^(]*(' "$@" | sed 's/($//; s/.*[ *]//' | sort -u; }
exported() { nm -D --defined-only "$libdir/lib$1.so" | awk '{print $3}' | sort -u; }
server_h=("$inc/server.h" "$inc/server_core.h" "$inc/server_http.h" "$inc/request_state.h")
client_h=("$inc/client.h" "$inc/host.h" "$inc/oauth.h")
mapfile -t shared_h < <(ls "$inc"/*.h | grep -vxF -f <(printf '%s\n' "${server_h[@]}" "${client_h[@]}"))
test "$(declared "${server_h[@]}" | wc -l)" -gt 50 # the pattern still finds them
for want in "mcp:${server_h[*]} ${client_h[*]} ${shared_h[*]}" \
            "mcp-server:${server_h[*]} ${shared_h[*]}" \
            "mcp-client:${client_h[*]} ${shared_h[*]}"; do
  lib=${want%%:*}
  # shellcheck disable=SC2086
  missing=$(comm -23 <(declared ${want#*:}) <(exported "$lib"))
  if [[ -n $missing ]]; then
    echo "install: lib$lib.so does not export:" $missing >&2; exit 1
  fi
done

# 3. CMake find_package(mcp)
cmake -S "$here/consumer" -B "$tmp/consumer" -DCMAKE_PREFIX_PATH="$prefix" \
      -DCMAKE_C_COMPILER="$cc" -DCMAKE_C_FLAGS="$san" -DCMAKE_EXE_LINKER_FLAGS="$san" >/dev/null
cmake --build "$tmp/consumer" >/dev/null
LD_LIBRARY_PATH=$libdir "$tmp/consumer/hello" | grep -q '^hello from libmcp'

# 4. The mcp command runs from the prefix (it finds libmcp beside it) and
#    has its man page.
"$prefix/bin/mcp" --version | grep -q '^mcp (libmcp) '
test -f "$prefix/share/man/man1/mcp.1"
echo "install: pkg-config and find_package consumers built and ran; a libmcp-server server and a libmcp-client client talked; mcp and mcp(1) installed"
