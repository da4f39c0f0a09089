#!/usr/bin/env bash
# make demo: a short tour of libmcp, built in BUILD_DIR.
#
# Drives the example server (examples/notes_server.c) over stdio with a
# scripted 2026-07-28 session and shows each request next to what came back.
set -euo pipefail
build=${1:-build/release}
server="$build/examples/notes_server"

bold=; dim=; reset=
if [[ -t 1 && -z ${NO_COLOR:-} ]]; then bold=$'\e[1m'; dim=$'\e[2m'; reset=$'\e[0m'; fi

meta='"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientInfo":{"name":"demo","version":"1"},"io.modelcontextprotocol/clientCapabilities":{"elicitation":{}}}'
requests=(
  "server/discover|{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"server/discover\",\"params\":{$meta}}"
  "tools/call echo|{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"tools/call\",\"params\":{\"name\":\"echo\",\"arguments\":{\"text\":\"hello, MCP\"},$meta}}"
  "tools/call add (structured output)|{\"jsonrpc\":\"2.0\",\"id\":3,\"method\":\"tools/call\",\"params\":{\"name\":\"add\",\"arguments\":{\"a\":2,\"b\":40},$meta}}"
  "tools/call add_note|{\"jsonrpc\":\"2.0\",\"id\":4,\"method\":\"tools/call\",\"params\":{\"name\":\"add_note\",\"arguments\":{\"name\":\"groceries\",\"text\":\"milk, bread\"},$meta}}"
  "resources/read note://groceries (a template)|{\"jsonrpc\":\"2.0\",\"id\":5,\"method\":\"resources/read\",\"params\":{\"uri\":\"note://groceries\",$meta}}"
  "completion/complete prompt argument|{\"jsonrpc\":\"2.0\",\"id\":6,\"method\":\"completion/complete\",\"params\":{\"ref\":{\"type\":\"ref/prompt\",\"name\":\"summarize_notes\"},\"argument\":{\"name\":\"style\",\"value\":\"b\"},$meta}}"
  "tools/call delete_note (asks the user first: input_required)|{\"jsonrpc\":\"2.0\",\"id\":7,\"method\":\"tools/call\",\"params\":{\"name\":\"delete_note\",\"arguments\":{\"name\":\"groceries\"},$meta}}"
  "ping (removed in 2026-07-28)|{\"jsonrpc\":\"2.0\",\"id\":8,\"method\":\"ping\",\"params\":{$meta}}"
)

echo "${bold}libmcp tour: the notes example server over stdio (protocol 2026-07-28)${reset}"
echo
coproc SERVER { "$server" 2>/dev/null; }
for entry in "${requests[@]}"; do
  title=${entry%%|*}; line=${entry#*|}
  echo "${bold}> $title${reset}"
  echo "${dim}  $line${reset}"
  printf '%s\n' "$line" >&"${SERVER[1]}"
  IFS= read -r reply <&"${SERVER[0]}"
  echo "  < $reply"
  echo
done
exec {SERVER[1]}>&-
wait "$SERVER_PID" 2>/dev/null || true
echo "${bold}Done.${reset} Each request carried its protocol version and capabilities in _meta;"
echo "there was no initialize handshake."
