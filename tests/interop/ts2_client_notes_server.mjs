// Interop: the reference TypeScript SDK v2 client (@modelcontextprotocol/client,
// pinned in package-lock.json) against examples/notes_server over Streamable
// HTTP, at protocol revision 2026-07-28.
//
//   node ts2_client_notes_server.mjs <path to notes_server>
//
// Lists the tools, calls echo and add, and checks every answer exactly.
// Then the client answers the confirmation delete_note asks for (an
// input_required round, MRTR): once accepting, once declining. The requests
// the client puts on the wire are recorded through its fetch, the messages
// it receives at its transport, so the test sees that each call took
// exactly one input round. Exits non-zero on any mismatch, and when the
// server does not stop cleanly on SIGTERM (a leak or sanitizer report fails
// the test too).
import assert from 'node:assert/strict';

import { spawnHttpServer } from './http_child.mjs';

const TIMEOUT_MS = 60_000;
const serverPath = process.argv[2];
if (!serverPath) {
  console.error('usage: node ts2_client_notes_server.mjs <notes_server>');
  process.exit(2);
}

let sdk;
try {
  sdk = await import('@modelcontextprotocol/client');
} catch (e) {
  console.error('interop: FAILED: @modelcontextprotocol/client is not installed ' +
                `(${e.message}). Run \`scripts/install-deps.sh check\` (npm ci in tests/interop).`);
  process.exit(1);
}
const { Client, StreamableHTTPClientTransport } = sdk;

// `notes_server --http 0` picks a free port and names its URL on stderr.
const { server, exit: serverExit, url: serverUrl } = spawnHttpServer(serverPath, ['--http', '0']);
const guard = setTimeout(() => {
  console.error(`interop: FAILED: no result within ${TIMEOUT_MS / 1000} s`);
  server.kill('SIGKILL');
  process.exit(1);
}, TIMEOUT_MS);

async function run() {
  const url = await serverUrl;

  // Every JSON-RPC message the client POSTs, in order.
  const sent = [];
  const recordingFetch = (input, init) => {
    if (init?.method === 'POST' && typeof init.body === 'string')
      sent.push(JSON.parse(init.body));
    return fetch(input, init);
  };
  const transport = new StreamableHTTPClientTransport(new URL(url), { fetch: recordingFetch });

  // The v2 client speaks the legacy handshake unless told otherwise: pin it
  // to 2026-07-28 (no fallback: anything else fails loudly). Declaring
  // elicitation lets the server ask for input.
  const client = new Client({ name: 'libmcp-interop', version: '1.0.0' },
                            { versionNegotiation: { mode: { pin: '2026-07-28' } },
                              capabilities: { elicitation: { form: {} } } });

  // The user, played by a queue of answers: each elicitation takes the next.
  const elicitations = [];
  const answers = [];
  client.setRequestHandler('elicitation/create', async (request) => {
    elicitations.push(request.params);
    assert.ok(answers.length > 0, `unexpected elicitation: ${JSON.stringify(request.params)}`);
    return answers.shift();
  });

  await client.connect(transport);
  // Every message the server sends, as the transport parsed it off the wire
  // (JSON or SSE), before the client acts on it.
  const received = [];
  const deliver = transport.onmessage;
  transport.onmessage = (message, extra) => {
    received.push(message);
    deliver(message, extra);
  };
  try {
    assert.equal(client.getNegotiatedProtocolVersion(), '2026-07-28');
    assert.deepEqual(client.getServerVersion(),
                     { name: 'notes-server', title: 'Notes', version: '0.1.0' });

    const { tools } = await client.listTools();
    assert.deepEqual(tools.map((t) => t.name),
                     ['add', 'add_note', 'countdown', 'delete_note', 'echo', 'export_notes']);
    const echoTool = tools.find((t) => t.name === 'echo');
    assert.equal(echoTool.description, 'Echo the text back');
    assert.deepEqual(echoTool.inputSchema, {
      type: 'object', properties: { text: { type: 'string' } }, required: ['text'] });
    assert.deepEqual(echoTool.annotations, { readOnlyHint: true });

    const echoed = await client.callTool({ name: 'echo',
                                           arguments: { text: 'héllo from TypeScript ✓' } });
    assert.deepEqual(echoed.content, [{ type: 'text', text: 'héllo from TypeScript ✓' }]);
    assert.equal(echoed.isError, undefined);

    // add has an outputSchema: the client validates structuredContent
    // against it, and the text block carries the same JSON.
    const sum = await client.callTool({ name: 'add', arguments: { a: 2, b: 40 } });
    assert.deepEqual(sum.structuredContent, { sum: 42 });
    assert.equal(sum.content.length, 1);
    assert.equal(sum.content[0].type, 'text');
    assert.deepEqual(JSON.parse(sum.content[0].text), { sum: 42 });

    const fraction = await client.callTool({ name: 'add', arguments: { a: 0.5, b: 0.25 } });
    assert.deepEqual(fraction.structuredContent, { sum: 0.75 });

    // A tool-level error is a result with isError, not a protocol error.
    const bad = await client.callTool({ name: 'add', arguments: { a: 'two', b: 40 } });
    assert.equal(bad.isError, true);
    assert.deepEqual(bad.content, [{ type: 'text', text: 'a and b must be numbers' }]);

    const saved = await client.callTool({ name: 'add_note',
                                          arguments: { name: 'doomed', text: 'delete me' } });
    assert.deepEqual(saved.content, [{ type: 'text', text: 'Saved note "doomed".' }]);
    await client.callTool({ name: 'add_note', arguments: { name: 'kept', text: 'keep me' } });

    // Accept: one input round, then the note is gone.
    const accepted = await deleteNote('doomed', { action: 'accept', content: { confirm: true } });
    assert.deepEqual(accepted.content, [{ type: 'text', text: 'Deleted the note "doomed".' }]);
    assert.equal(accepted.isError, undefined);

    // Decline: one input round, and the note stays.
    const declined = await deleteNote('kept', { action: 'decline' });
    assert.deepEqual(declined.content, [{ type: 'text', text: 'Kept the note "kept".' }]);

    const index = await client.readResource({ uri: 'notes://index' });
    assert.deepEqual(JSON.parse(index.contents[0].text).sort(), ['kept', 'welcome']);
  } finally {
    await client.close();
  }

  // Calls delete_note on `name`, the user giving `answer` when asked, and
  // checks the round on the wire: the call is sent twice, the first time
  // bare and answered input_required with one elicitation; the second time
  // under a new id with that answer (and the request state, if any, echoed
  // byte for byte), answered complete.
  async function deleteNote(name, answer) {
    const firstSent = sent.length, firstReceived = received.length;
    const elicited = elicitations.length;
    answers.push(answer);
    const result = await client.callTool({ name: 'delete_note', arguments: { name } });
    assert.equal(answers.length, 0, 'the answer was not asked for');

    assert.equal(elicitations.length, elicited + 1, 'exactly one elicitation');
    const asked = elicitations[elicited];
    assert.equal(asked.message, `Really delete the note "${name}"?`);
    assert.deepEqual(asked.requestedSchema, {
      type: 'object', properties: { confirm: { type: 'boolean', title: 'Delete it' } },
      required: ['confirm'] });

    const calls = sent.slice(firstSent).filter((m) => m.method === 'tools/call');
    assert.equal(calls.length, 2, 'delete_note is sent twice: the call and its retry');
    const [call, retry] = calls;
    assert.deepEqual(call.params.arguments, { name });
    assert.equal(call.params.inputResponses, undefined);
    assert.deepEqual(retry.params.arguments, { name });
    assert.notEqual(retry.id, call.id);
    assert.deepEqual(retry.params.inputResponses, { confirm: answer });

    const responses = received.slice(firstReceived).filter((m) => 'id' in m && !('method' in m));
    const round = responses.find((m) => m.id === call.id);
    assert.equal(round.result.resultType, 'input_required');
    assert.deepEqual(Object.keys(round.result.inputRequests), ['confirm']);
    assert.equal(round.result.inputRequests.confirm.method, 'elicitation/create');
    assert.equal(retry.params.requestState, round.result.requestState);
    const done = responses.find((m) => m.id === retry.id);
    assert.equal(done.result.resultType, 'complete');
    return result;
  }
}

let failure = null;
try {
  await run();
} catch (e) {
  failure = e;
}
server.kill('SIGTERM');
const { code, signal } = await serverExit;
clearTimeout(guard);
if (failure) {
  console.error('interop: FAILED:', failure);
  process.exit(1);
}
if (code !== 0) {
  const how = signal ? `signal ${signal}` : `status ${code}`;
  console.error(`interop: FAILED: notes_server exited with ${how}`);
  process.exit(1);
}
console.log('interop: TypeScript v2 client <-> notes_server over HTTP at 2026-07-28: ' +
            'all checks passed');
