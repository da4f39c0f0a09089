// A small server on the TypeScript SDK v2 (@modelcontextprotocol/server),
// served over stdio, for the C client's interop test
// (tests/integration/client_stdio_ts2.c):
//   echo      returns its text
//   confirm   asks for confirmation through an elicitation (MRTR)
//   add_tool  registers a new tool, which tells listeners the list changed
import { McpServer, inputRequired, acceptedContent } from '@modelcontextprotocol/server';
import { serveStdio } from '@modelcontextprotocol/server/stdio';
import * as z from 'zod';

serveStdio(() => {
    const server = new McpServer(
        { name: 'ts2-interop', version: '1.0.0' },
        { capabilities: { tools: { listChanged: true } } }
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

    let added = 0;
    server.registerTool(
        'add_tool',
        { description: 'Register one more tool', inputSchema: z.object({}) },
        async () => {
            added += 1;
            const name = `extra_${added}`;
            server.registerTool(name, { description: 'An added tool', inputSchema: z.object({}) }, async () => ({
                content: [{ type: 'text', text: name }]
            }));
            return { content: [{ type: 'text', text: `added ${name}` }] };
        }
    );
    return server;
});
