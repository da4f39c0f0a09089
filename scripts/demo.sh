#!/usr/bin/env bash
# make demo: a tour of libmcp through its command-line client, mcp.
#
#   scripts/demo.sh [BUILD_DIR]     (default build/release)
#
# Starts the example server (examples/notes_server.c) over HTTP on a free
# port and runs mcp against it: what the server is, its tools, a call with
# a progress bar, a listener that receives an update, its skill (verified),
# a slow call that becomes a task (detached, shown, waited for), a tool
# that asks for confirmation (answered with --yes); then the same server
# over stdio, and by its name in a servers.json (README's line).
# Every step is bounded in time, the server is stopped at the end whatever
# happens, and colour is used only on a terminal and never with NO_COLOR.
set -euo pipefail
build=${1:-build/release}
mcp_bin="$build/tools/mcp/mcp"
server="$build/examples/notes_server"
skills="$(dirname "$0")/../examples/skills"
for program in "$mcp_bin" "$server"; do
  if [[ ! -x $program ]]; then
    echo "demo: $program is missing; build first (make demo does)" >&2
    exit 1
  fi
done

bold=; dim=; cyan=; reset=
if [[ -t 1 && -z ${NO_COLOR:-} && ${TERM:-} != dumb ]]; then
  bold=$'\e[1m'; dim=$'\e[2m'; cyan=$'\e[36m'; reset=$'\e[0m'
fi

tmp=$(mktemp -d)
server_pid=
listen_pid=
cleanup() {
  for pid in $listen_pid $server_pid; do
    kill "$pid" 2>/dev/null || true
    wait "$pid" 2>/dev/null || true
  done
  rm -rf "$tmp"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

# No step may take long: mcp waits at most 15 s for an answer, and the
# process itself is stopped after 30 s.
mcp() { timeout 30 "$mcp_bin" --timeout 15 "$@"; }

chapter() { printf '\n%s%s%s\n' "$bold" "$1" "$reset"; }
say() { printf '%s\n' "$*"; }
# A word as it would be typed in a shell: text='milk, bread'.
quoted() {
  local word=$1
  if [[ $word =~ ^[A-Za-z0-9_./:@%+,=-]*$ && $word != *,* ]]; then
    printf '%s' "$word"
  elif [[ $word =~ ^([A-Za-z0-9_-]+=)(.*)$ ]]; then
    printf "%s'%s'" "${BASH_REMATCH[1]}" "${BASH_REMATCH[2]}"
  else
    printf "'%s'" "$word"
  fi
}
# Shows a command the way a reader would type it, then runs it.
run() {
  local shown=mcp word
  for word in "$@"; do shown+=" $(quoted "$word")"; done
  printf '\n%s$ %s%s\n' "$cyan" "$shown" "$reset"
  mcp "$@"
}
# Waits (up to $2 seconds) until file $1 contains $3.
wait_for() {
  local deadline=$((SECONDS + $2))
  until grep -q "$3" "$1" 2>/dev/null; do
    if ((SECONDS >= deadline)); then
      echo "demo: timed out waiting for \"$3\" in $1:" >&2
      cat "$1" >&2
      exit 1
    fi
    sleep 0.1
  done
}

chapter "libmcp tour: the mcp command against the notes example server"
say "mcp talks to any MCP server, over HTTP or stdio. (Here, mcp is $mcp_bin.)"

# ---------------------------------------------------------------------------
chapter "1. Over Streamable HTTP"
"$server" --skills "$skills" --http 0 >"$tmp/server.log" 2>&1 &
server_pid=$!
wait_for "$tmp/server.log" 10 'http://[0-9.]*:[0-9]*/mcp'
url=$(grep -o 'http://[0-9.]*:[0-9]*/mcp' "$tmp/server.log" | head -n1)
say "notes_server is serving $url"

run "$url" info
run "$url" tools

say ""
say "${dim}Arguments are typed by the tool's input schema: a and b are numbers.${reset}"
run "$url" call add a=2 b=40

say ""
say "${dim}countdown reports progress: mcp draws it on stderr.${reset}"
run "$url" call countdown seconds=3

say ""
say "${dim}A listener subscribes to the index of notes (in the background)...${reset}"
printf '%s$ mcp %s listen --subscribe notes://index --count 1 &%s\n' "$cyan" "$url" "$reset"
mcp "$url" listen --subscribe notes://index --count 1 >"$tmp/listen.out" 2>"$tmp/listen.err" &
listen_pid=$!
wait_for "$tmp/listen.err" 15 'listening for'
sed 's/^/  /' "$tmp/listen.err"
say "${dim}...and another mcp adds a note, which changes the index:${reset}"
run "$url" call add_note name=groceries text="milk, bread"
wait "$listen_pid" || { echo "demo: the listener failed" >&2; cat "$tmp/listen.err" >&2; exit 1; }
listen_pid=
say "${dim}The listener received:${reset}"
sed 's/^/  /' "$tmp/listen.out"

run "$url" read note://groceries

say ""
say "${dim}Skills are instructions for the model, with files beside them; mcp prints${reset}"
say "${dim}a skill's SKILL.md only once its size, digest and frontmatter match the listing.${reset}"
run "$url" skills
run "$url" skill note-taking

say ""
say "${dim}export_notes is slow, so the server makes a task of it: the call is answered${reset}"
say "${dim}at once with a handle. --detach leaves the task running and prints its id...${reset}"
printf '\n%s$ id=$(mcp %s call export_notes seconds=2 --detach)%s\n' "$cyan" "$url" "$reset"
task_id=$(mcp "$url" call export_notes seconds=2 --detach)
say "${dim}...which any later mcp can look at, or wait for:${reset}"
run "$url" task "$task_id"
run "$url" task "$task_id" --wait

say ""
say "${dim}delete_note asks the user to confirm first; --yes answers for a script.${reset}"
run "$url" call delete_note name=groceries --yes

kill "$server_pid"
wait "$server_pid" 2>/dev/null || true
server_pid=

# ---------------------------------------------------------------------------
chapter "2. Over stdio"
say "After --, mcp starts the server itself and talks to it over its stdin and stdout."
run call echo text="hello over stdio" -- "$server"
run complete prompt summarize_notes style=b -- "$server"

say ""
say "${dim}--verbose shows every message on the wire: no initialize handshake; each${reset}"
say "${dim}request carries its protocol version and capabilities in _meta.${reset}"
run --verbose ping -- "$server"

# ---------------------------------------------------------------------------
chapter "3. Servers by name"
say "A name is looked up in the \"mcpServers\" file that desktop clients use (--config,"
say "else \$MCP_CONFIG, else ~/.config/mcp/servers.json). This one names notes_server:"
printf '{"mcpServers": {"notes": {"command": "%s"}}}\n' "$(realpath "$server")" \
  >"$tmp/servers.json"
sed 's/^/  /' "$tmp/servers.json"
export MCP_CONFIG="$tmp/servers.json"
say ""
say "${dim}Each run starts the server afresh, with its one note, \"welcome\".${reset}"
run notes call delete_note name=welcome --yes

chapter "Done."
say "Next: mcp --help, man tools/mcp/mcp.1, and the examples in examples/."
