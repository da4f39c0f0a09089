// A small server on the TypeScript SDK v2 (@modelcontextprotocol/server
// createMcpHandler, served by node:http through @modelcontextprotocol/node),
// over Streamable HTTP, for the C client's interop test
// (tests/integration/client_http_ts2.c). The tools are those of
// ts2_stdio_server.mjs:
//   echo      returns its text
//   confirm   asks for confirmation through an elicitation (MRTR)
//   add_tool  registers a new tool, which tells listeners the list changed
//
//   node ts2_http_server.mjs
// listens on a free port of 127.0.0.1 and names its URL on stderr; SIGTERM
// stops it.
//
// createMcpHandler builds a fresh server per HTTP request, so the added
// tools live in this module, and listeners hear of them through the
// handler's notify facade.
import { createServer } from 'node:http';
import { McpServer, acceptedContent, createMcpHandler, inputRequired } from '@modelcontextprotocol/server';
import { toNodeHandler } from '@modelcontextprotocol/node';
import * as z from 'zod';

const confirmation = z.object({ confirm: z.boolean() });
let added = 0;

function buildServer() {
    const server = new McpServer(
        { name: 'ts2-interop-http', version: '1.0.0' },
        { capabilities: { tools: { listChanged: true } } }
    );

    server.registerTool(
        'echo',
        { description: 'Echo the text back', inputSchema: z.object({ text: z.string() }) },
        async ({ text }) => ({ content: [{ type: 'text', text }] })
    );

    server.registerTool(
        'confirm',
        { description: 'Ask the user to confirm', inputSchema: z.object({ what: z.string() }) },
        async ({ what }, ctx) => {
            const responses = ctx.mcpReq.inputResponses;
            if (responses && responses.answer) {
                const content = acceptedContent(responses, 'answer', confirmation);
                const yes = content?.confirm === true;
                return { content: [{ type: 'text', text: yes ? `confirmed ${what}` : `refused ${what}` }] };
            }
            return inputRequired({
                inputRequests: {
                    answer: inputRequired.elicit({ message: `Confirm ${what}?`, requestedSchema: confirmation })
                }
            });
        }
    );

    server.registerTool(
        'add_tool',
        { description: 'Register one more tool', inputSchema: z.object({}) },
        async () => {
            added += 1;
            handler.notify.toolsChanged();
            return { content: [{ type: 'text', text: `added extra_${added}` }] };
        }
    );

    for (let i = 1; i <= added; i++) {
        const name = `extra_${i}`;
        server.registerTool(name, { description: 'An added tool', inputSchema: z.object({}) }, async () => ({
            content: [{ type: 'text', text: name }]
        }));
    }
    return server;
}

const handler = createMcpHandler(buildServer, { onerror: (e) => console.error(`ts2_http_server: ${e.message}`) });
const serve = toNodeHandler(handler);
const http = createServer((req, res) => {
    if (new URL(req.url, 'http://localhost').pathname !== '/mcp') {
        res.writeHead(404).end();
        return;
    }
    serve(req, res).catch((e) => {
        console.error(`ts2_http_server: ${e.stack}`);
        if (!res.headersSent) res.writeHead(500);
        res.end();
    });
});

http.listen(0, '127.0.0.1', () => {
    console.error(`ts2_http_server: serving http://127.0.0.1:${http.address().port}/mcp`);
});

process.on('SIGTERM', async () => {
    await handler.close();
    process.exit(0);
});
