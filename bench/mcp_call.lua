-- wrk script: one modern (2026-07-28) MCP request, repeated on keep-alive
-- connections, with the headers and _meta envelope a real client sends.
--
--   MCP_OP=echo (default)  tools/call echo {"text":"hello"}
--   MCP_OP=echo_inline     the same call of echo_inline (libmcp: run_inline)
--   MCP_OP=list            tools/list
--   MCP_OP=read            resources/read bench://big
--
-- done() prints one JSON line: requests/s, p50/p99 latency (µs), errors.
local op = os.getenv("MCP_OP") or "echo"
local envelope = '"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28",' ..
  '"io.modelcontextprotocol/clientInfo":{"name":"wrk","version":"4.1.0"},' ..
  '"io.modelcontextprotocol/clientCapabilities":{}}'

local method, name, params
if op == "list" then
  method, params = "tools/list", "{" .. envelope .. "}"
elseif op == "read" then
  method, name = "resources/read", "bench://big"
  params = '{"uri":"bench://big",' .. envelope .. "}"
else
  local tool = op == "echo_inline" and "echo_inline" or "echo"
  method, name = "tools/call", tool
  params = '{"name":"' .. tool .. '","arguments":{"text":"hello"},' .. envelope .. "}"
end

wrk.method = "POST"
wrk.body = '{"jsonrpc":"2.0","id":1,"method":"' .. method .. '","params":' .. params .. "}"
wrk.headers["Content-Type"] = "application/json"
wrk.headers["Accept"] = "application/json, text/event-stream"
wrk.headers["MCP-Protocol-Version"] = "2026-07-28"
wrk.headers["Mcp-Method"] = method
if name then
  wrk.headers["Mcp-Name"] = name
end

done = function(summary, latency, requests)
  local seconds = summary.duration / 1e6
  local e = summary.errors
  io.write(string.format(
    '{"requests":%d,"seconds":%.3f,"rps":%.1f,"p50_us":%.1f,"p99_us":%.1f,' ..
    '"errors":%d,"non2xx":%d}\n',
    summary.requests, seconds, summary.requests / seconds,
    latency:percentile(50), latency:percentile(99),
    e.connect + e.read + e.write + e.timeout, e.status))
end
