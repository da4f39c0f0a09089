// The TypeScript SDK v2 side of the benchmarks: the same offer as
// bench/bench_server.c, on @modelcontextprotocol/server 2.4.0.
//
//   node ts_server.mjs stdio [--tools N]
//   node ts_server.mjs http [PORT] [--tools N]
//
// HTTP is the SDK's documented wiring: createMcpHandler() (2026-07-28, with
// the stateless legacy fallback it has by default) behind toNodeHandler()
// from @modelcontextprotocol/node and the localhost Host/Origin guards, on
// node:http with keep-alive. The URL is the first line of stdout.
import http from 'node:http';
import { McpServer, createMcpHandler, inputRequired, acceptedContent } from '@modelcontextprotocol/server';
import { serveStdio } from '@modelcontextprotocol/server/stdio';
import { toNodeHandler, localhostHostValidation, localhostOriginValidation } from '@modelcontextprotocol/node';
import * as z from 'zod';

const args = process.argv.slice(2);
const mode = args[0] ?? 'stdio';
let port = 0;
let extraTools = 0;
for (let i = 1; i < args.length; i++) {
  if (args[i] === '--tools') extraTools = Number(args[++i]);
  else port = Number(args[i]);
}

const BIG = (() => {
  const chars = [];
  for (let i = 0; i < 1024 * 1024; i++) chars.push(i % 64 === 63 ? '\n' : String.fromCharCode(97 + (i % 26)));
  return chars.join('');
})();

const echoSchema = z.object({ text: z.string() });
const confirmation = z.object({ confirm: z.boolean() });

function build() {
  const server = new McpServer({ name: 'ts2-bench', version: '2.4.0' },
                               { capabilities: { tools: { listChanged: true }, resources: {} } });
  server.registerTool('echo', { description: 'Echo the text back', inputSchema: echoSchema },
                      async ({ text }) => ({ content: [{ type: 'text', text }] }));
  server.registerTool('confirm', { description: 'Ask for a confirmation, then answer', inputSchema: z.object({}) },
    async (_args, ctx) => {
      const responses = ctx.mcpReq.inputResponses;
      if (responses && responses.confirm) {
        const content = acceptedContent(responses, 'confirm', confirmation);
        return { content: [{ type: 'text', text: content?.confirm === true ? 'confirmed' : 'refused' }] };
      }
      return inputRequired({
        inputRequests: { confirm: inputRequired.elicit({ message: 'Confirm?', requestedSchema: confirmation }) }
      });
    });
  for (let i = 1; i <= extraTools; i++) {
    server.registerTool(`tool_${i}`, { description: `Extra tool number ${i} (echoes)`, inputSchema: echoSchema },
                        async ({ text }) => ({ content: [{ type: 'text', text }] }));
  }
  server.registerResource('big', 'bench://big', { mimeType: 'text/plain' },
                          async (uri) => ({ contents: [{ uri: uri.href, mimeType: 'text/plain', text: BIG }] }));
  return server;
}

if (mode === 'stdio') {
  serveStdio(build);
} else if (mode === 'http') {
  const handler = toNodeHandler(createMcpHandler(build));
  const validHost = localhostHostValidation();
  const validOrigin = localhostOriginValidation();
  const server = http.createServer({ keepAlive: true, keepAliveTimeout: 60_000 }, (req, res) => {
    if (req.url !== '/mcp' && !req.url.startsWith('/mcp?')) {
      res.writeHead(404).end();
      return;
    }
    if (!validHost(req, res) || !validOrigin(req, res)) return;
    void handler(req, res);
  });
  server.keepAliveTimeout = 60_000;
  server.listen(port, '127.0.0.1', () => {
    process.stdout.write(`http://127.0.0.1:${server.address().port}/mcp\n`);
  });
  const stop = () => server.close(() => process.exit(0));
  process.on('SIGTERM', stop);
  process.on('SIGINT', stop);
} else {
  console.error('usage: node ts_server.mjs stdio|http [PORT] [--tools N]');
  process.exit(2);
}
