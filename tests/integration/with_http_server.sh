#!/bin/sh
# with_http_server.sh SERVER PROGRAM [ARGS...]
#
# Runs SERVER --http 0 (a server that prints "serving URL" on stderr, as
# notes_server does), then PROGRAM ARGS... URL, then stops the server.
# Exits with PROGRAM's status; 1 if the server never said where it serves.
set -u
server=$1
shift
log=$(mktemp)
pid=
trap '[ -n "$pid" ] && kill "$pid" 2>/dev/null; rm -f "$log"' EXIT
"$server" --http 0 2>"$log" &
pid=$!
url=
tries=0
while [ -z "$url" ] && [ "$tries" -lt 100 ]; do
    url=$(sed -n 's/.*serving \(http:[^ ]*\).*/\1/p' "$log")
    [ -n "$url" ] && break
    kill -0 "$pid" 2>/dev/null || break
    sleep 0.1
    tries=$((tries + 1))
done
if [ -z "$url" ]; then
    echo "with_http_server.sh: $server did not say where it serves:" >&2
    cat "$log" >&2
    exit 1
fi
"$@" "$url"
status=$?
# Stopped (SIGTERM) before its log is shown, so that what it says on the
# way out (a sanitizer's leak report, say) is shown too.
kill "$pid"
wait "$pid"
cat "$log" >&2
exit "$status"
