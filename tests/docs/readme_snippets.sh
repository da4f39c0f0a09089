#!/bin/sh
# Compiles every C block of README.md against the headers of this tree, so
# that the README cannot drift from the API unnoticed: make check fails as
# soon as one stops compiling. The blocks are read from README.md when the
# test runs, never copied.
#
#   readme_snippets.sh README.md INCLUDE_DIR CC [CFLAG ...]
#
# A block with a main() is a whole program and is compiled as it is. Any
# other block is a fragment: one that opens with a definition ("static
# ...") is compiled at file scope, any other as the body of a function.
# Fragments follow a prelude that declares, without defining, what they
# use from the application around them (srv, err, app, callbacks ...).
# A new fragment that needs another such name gets it added there.
set -eu
readme=$1 include=$2
shift 2
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

cat >"$tmp/prelude.h" <<'PRELUDE'
#include <string.h>

#include <mcp/mcp.h>

extern mcp_server_t *srv;
extern mcp_client_t *client;
extern mcp_error_t err;
extern void *app;
extern json_t *args, *result;
extern const char *pkcs8_pem_text, *secret;
void render_frame(int frame);
void tools_changed(void *user);
int open_browser_and_wait(void *user, const char *authorization_url, char **redirect_out);
int read_workload_token(void *user, const char *audience, char **assertion_out);
int users_id_token(void *user, const char *audience, char **assertion_out);
PRELUDE

# One file per ```c block, named after the README line the block starts on.
awk -v dir="$tmp" '
    inside && /^```/ { inside = 0; close(file); next }
    inside           { print > file; next }
    /^```c[ \t]*$/   { inside = 1; file = sprintf("%s/README_L%04d.c", dir, NR + 1) }
' "$readme"

count=0
failed=0
for block in "$tmp"/README_L*.c; do
    [ -e "$block" ] || break
    count=$((count + 1))
    line=${block##*_L}
    line=${line%.c}
    line=${line#"${line%%[!0]*}"}
    unit="$tmp/unit_$line.c"
    # #line makes the compiler name README.md's own lines in what it says.
    here="#line $line \"README.md\""
    if grep -q '^int main(' "$block"; then
        { echo "$here"; cat "$block"; } >"$unit"
    elif sed -n '/[^[:space:]]/{p;q;}' "$block" | grep -q '^static '; then
        { echo '#include "prelude.h"'; echo "$here"; cat "$block"; } >"$unit"
    else
        { echo '#include "prelude.h"'; echo 'void snippet(void) {'; echo "$here"; cat "$block"
          echo '}'; } >"$unit"
    fi
    # -fsyntax-only: declarations and types are what drift; nothing runs.
    if out=$("$@" -std=c11 -Werror -Wall -Wextra -Wno-unused-parameter -Wno-unused-variable \
                -Wno-unused-but-set-variable -Wno-unused-function -I"$include" -I"$tmp" \
                -fsyntax-only "$unit" 2>&1); then
        echo "README.md line $line: compiles"
    else
        echo "README.md line $line: does not compile:"
        printf '%s\n' "$out"
        failed=$((failed + 1))
    fi
done
if [ "$count" -eq 0 ]; then
    echo "no C block found in $readme" >&2
    exit 1
fi
echo "$count C blocks, $failed failed"
[ "$failed" -eq 0 ]
