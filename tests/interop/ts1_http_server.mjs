// A Streamable HTTP server written with the TypeScript SDK v1
// (@modelcontextprotocol/sdk 1.32.2), a legacy-only peer for the client's
// era tests. Usage: node ts1_http_server.mjs stateful|stateless PORT
// It listens on 127.0.0.1 only and prints its URL on stdout when ready.
import { createServer } from 'node:http';
import { randomUUID } from 'node:crypto';
import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import { StreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/streamableHttp.js';
import { z } from 'zod';

const [mode, port] = process.argv.slice(2);
if (mode !== 'stateful' && mode !== 'stateless') {
  console.error('usage: ts1_http_server.mjs stateful|stateless PORT');
  process.exit(2);
}

function newServer() {
  const server = new McpServer({ name: `ts1-${mode}`, version: '1.0.0' });
  server.registerTool('echo', { inputSchema: { message: z.string() } },
    async ({ message }) => ({ content: [{ type: 'text', text: message }] }));
  server.registerTool('add', { inputSchema: { a: z.number(), b: z.number() } },
    async ({ a, b }) => ({ content: [{ type: 'text', text: String(a + b) }] }));
  return server;
}

const sessions = new Map();

async function readBody(req) {
  const chunks = [];
  for await (const chunk of req) chunks.push(chunk);
  const text = Buffer.concat(chunks).toString('utf8');
  return text ? JSON.parse(text) : undefined;
}

async function handle(req, res) {
  const body = req.method === 'POST' ? await readBody(req) : undefined;
  if (mode === 'stateless') {
    const transport = new StreamableHTTPServerTransport({ sessionIdGenerator: undefined });
    const server = newServer();
    res.on('close', () => { transport.close(); server.close(); });
    await server.connect(transport);
    await transport.handleRequest(req, res, body);
    return;
  }
  const id = req.headers['mcp-session-id'];
  let transport = id ? sessions.get(id) : undefined;
  if (!transport && !id && body && body.method === 'initialize') {
    transport = new StreamableHTTPServerTransport({
      sessionIdGenerator: () => randomUUID(),
      onsessioninitialized: (sid) => sessions.set(sid, transport),
    });
    transport.onclose = () => { if (transport.sessionId) sessions.delete(transport.sessionId); };
    await newServer().connect(transport);
  }
  if (!transport) {
    // The canonical example wiring's answer (wire-ts2.md 6.1).
    res.writeHead(400, { 'content-type': 'application/json' });
    res.end(JSON.stringify({ jsonrpc: '2.0', error: { code: -32000,
      message: 'Bad Request: No valid session ID provided' }, id: body?.id ?? null }));
    return;
  }
  await transport.handleRequest(req, res, body);
}

const http = createServer((req, res) => {
  handle(req, res).catch((e) => {
    console.error(e);
    if (!res.headersSent) res.writeHead(500);
    res.end();
  });
});
http.listen(Number(port), '127.0.0.1', () => {
  console.log(`http://127.0.0.1:${http.address().port}/mcp`);
});
