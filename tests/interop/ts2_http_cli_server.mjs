// A server on the TypeScript SDK v2 (@modelcontextprotocol/server with the
// Node adapter @modelcontextprotocol/node) over Streamable HTTP, for the mcp
// command's interop test (tests/integration/cli_peers.c): the echo and
// confirm tools of ts2_http_server.mjs, plus a resource, a prompt and a way
// to make the resource change:
//   echo {text}      returns its text
//   confirm {what}   asks for confirmation through an elicitation (MRTR)
//   touch {uri}      tells listeners that a resource changed
//   memo://note      a text resource
//   greet {name}     a prompt
// Usage: node ts2_http_cli_server.mjs [PORT]   (0 or none: any free port)
// It listens on 127.0.0.1 only and prints its URL on stdout when ready.
import http from 'node:http';
import { McpServer, createMcpHandler, inputRequired, acceptedContent } from '@modelcontextprotocol/server';
import { toNodeHandler } from '@modelcontextprotocol/node';
import * as z from 'zod';

let handler;

function newServer() {
    const server = new McpServer(
        { name: 'ts2-http', version: '1.0.0' },
        { capabilities: { tools: { listChanged: true }, resources: { subscribe: true } } }
    );

    server.registerTool(
        'echo',
        { description: 'Echo the text back', inputSchema: z.object({ text: z.string() }) },
        async ({ text }) => ({ content: [{ type: 'text', text }] })
    );

    const confirmation = z.object({ confirm: z.boolean() });
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
        'touch',
        { description: 'Tell listeners that a resource changed', inputSchema: z.object({ uri: z.string() }) },
        async ({ uri }) => {
            handler.notify.resourceUpdated(uri);
            return { content: [{ type: 'text', text: `touched ${uri}` }] };
        }
    );

    server.registerResource('note', 'memo://note', { mimeType: 'text/plain', description: 'A memo' }, async uri => ({
        contents: [{ uri: uri.href, mimeType: 'text/plain', text: 'remember the milk' }]
    }));

    server.registerPrompt(
        'greet',
        { description: 'Greet someone', argsSchema: z.object({ name: z.string() }) },
        ({ name }) => ({ messages: [{ role: 'user', content: { type: 'text', text: `Say hello to ${name}.` } }] })
    );
    return server;
}

handler = createMcpHandler(newServer);
const server = http.createServer(toNodeHandler(handler));
server.listen(Number(process.argv[2] ?? 0), '127.0.0.1', () => {
    console.log(`http://127.0.0.1:${server.address().port}/mcp`);
});
process.on('SIGTERM', () => {
    server.closeAllConnections?.();
    server.close(() => process.exit(0));
});
