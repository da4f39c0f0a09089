// Interop: the reference TypeScript SDK clients speaking a legacy revision
// (2025-11-25) to examples/notes_server, which serves them from the same
// handlers as modern clients.
//
//   node ts_legacy_client_notes_server.mjs <notes_server> <v1|v2> <stdio|http>
//
// v1 is @modelcontextprotocol/sdk (legacy only); v2 is
// @modelcontextprotocol/client, whose default negotiation is the legacy
// initialize handshake (wire-ts2.md 8.4). Both are pinned in
// package-lock.json. Over HTTP the server runs in its default legacy mode
// (sessions).
//
// The client lists and calls tools, answers the elicitation delete_note
// asks for (libmcp bridges the handler's input request to a real
// elicitation/create), receives progress from countdown, subscribes to a
// note and hears of its update, runs export_notes as a task (v1, whose
// experimental tasks are 2025-11-25's), and (HTTP) ends its session. Exits non-zero
// on any mismatch, and when the server does not stop cleanly (a leak or
// sanitizer report fails the test too).
import assert from 'node:assert/strict';

import { spawnHttpServer } from './http_child.mjs';

const TIMEOUT_MS = 90_000;
const [serverPath, flavour, transportKind] = process.argv.slice(2);
if (!serverPath || !['v1', 'v2'].includes(flavour) || !['stdio', 'http'].includes(transportKind)) {
  console.error('usage: node ts_legacy_client_notes_server.mjs <notes_server> <v1|v2> <stdio|http>');
  process.exit(2);
}

function missing(what, e) {
  console.error(`interop: FAILED: ${what} is not installed (${e.message}). ` +
                'Run `scripts/install-deps.sh check` (npm ci in tests/interop).');
  process.exit(1);
}

// The two SDKs, behind one small surface.
let sdk;
try {
  if (flavour === 'v1') {
    const { Client } = await import('@modelcontextprotocol/sdk/client/index.js');
    const { StdioClientTransport } = await import('@modelcontextprotocol/sdk/client/stdio.js');
    const { StreamableHTTPClientTransport } =
      await import('@modelcontextprotocol/sdk/client/streamableHttp.js');
    const types = await import('@modelcontextprotocol/sdk/types.js');
    sdk = {
      Client, StdioClientTransport, StreamableHTTPClientTransport,
      onRequest: (client, method, handler) => client.setRequestHandler(
        { 'elicitation/create': types.ElicitRequestSchema }[method], handler),
      onNotification: (client, method, handler) => client.setNotificationHandler(
        { 'notifications/resources/updated': types.ResourceUpdatedNotificationSchema }[method],
        handler),
      callTool: (client, params, options) =>
        client.callTool(params, types.CallToolResultSchema, options)
    };
  } else {
    const { Client, StreamableHTTPClientTransport } = await import('@modelcontextprotocol/client');
    const { StdioClientTransport } = await import('@modelcontextprotocol/client/stdio');
    sdk = {
      Client, StdioClientTransport, StreamableHTTPClientTransport,
      onRequest: (client, method, handler) => client.setRequestHandler(method, handler),
      onNotification: (client, method, handler) => client.setNotificationHandler(method, handler),
      callTool: (client, params, options) => client.callTool(params, options)
    };
  }
} catch (e) {
  missing(flavour === 'v1' ? '@modelcontextprotocol/sdk' : '@modelcontextprotocol/client', e);
}

// ------------------------------------------------------------------ server
let server = null; // the HTTP server process (stdio: the transport owns it)
let serverExit = null;

async function startHttpServer() {
  const child = spawnHttpServer(serverPath, ['--http', '0']);
  server = child.server;
  serverExit = child.exit;
  return child.url;
}

const guard = setTimeout(() => {
  console.error(`interop: FAILED: no result within ${TIMEOUT_MS / 1000} s`);
  server?.kill('SIGKILL');
  process.exit(1);
}, TIMEOUT_MS);

// Records every message the transport sends and receives, to check what
// went over the wire and not only what the SDK made of it.
function tap(transport, wire) {
  const send = transport.send.bind(transport);
  transport.send = (message, options) => {
    wire.push({ from: 'client', message });
    return send(message, options);
  };
  let handler;
  const delivered = (message, extra) => {
    wire.push({ from: 'server', message });
    return handler(message, extra);
  };
  Object.defineProperty(transport, 'onmessage', {
    configurable: true,
    get: () => (handler ? delivered : undefined),
    set: (h) => { handler = h; }
  });
}

function textOf(result) {
  assert.equal(result.content?.[0]?.type, 'text', JSON.stringify(result));
  return result.content[0].text;
}

// ------------------------------------------------------------------- the run
async function run() {
  let transport;
  let stdioExit = null;
  if (transportKind === 'http') {
    transport = new sdk.StreamableHTTPClientTransport(new URL(await startHttpServer()));
  } else {
    transport = new sdk.StdioClientTransport({ command: serverPath, args: [], stderr: 'inherit' });
  }
  const wire = [];
  tap(transport, wire);
  const client = new sdk.Client({ name: `libmcp-interop-${flavour}`, version: '1.0.0' },
                                { capabilities: { elicitation: {} } });

  // What the user answers when a tool asks.
  const asked = [];
  sdk.onRequest(client, 'elicitation/create', async (request) => {
    asked.push(request.params);
    return { action: 'accept', content: { confirm: true } };
  });
  const updates = [];
  let updated = null;
  sdk.onNotification(client, 'notifications/resources/updated', (notification) => {
    updates.push(notification.params.uri);
    if (updated) updated();
  });

  await client.connect(transport);
  if (transportKind === 'stdio') {
    stdioExit = new Promise((resolve) => transport._process?.once('exit',
      (code, signal) => resolve({ code, signal })));
  }
  try {
    // The legacy handshake, answered with the client's version.
    assert.equal(wire[0].message.method, 'initialize');
    assert.equal(wire[0].message.params.protocolVersion, '2025-11-25');
    assert.equal(wire[1].message.result.protocolVersion, '2025-11-25');
    assert.equal(client.getServerVersion().name, 'notes-server');
    const caps = client.getServerCapabilities();
    assert.equal(caps.resources?.subscribe, true);
    assert.equal(caps.tools?.listChanged, true);

    // Lists and calls.
    const { tools } = await client.listTools();
    assert.deepEqual(tools.map((t) => t.name).sort(),
                     ['add', 'add_note', 'countdown', 'delete_note', 'echo', 'export_notes']);
    const echoed = await sdk.callTool(client, { name: 'echo', arguments: { text: 'héllo ✓' } });
    assert.equal(textOf(echoed), 'héllo ✓');
    assert.equal(echoed.resultType, undefined);
    const sum = await sdk.callTool(client, { name: 'add', arguments: { a: 2, b: 40 } });
    assert.deepEqual(sum.structuredContent, { sum: 42 });

    // A subscribed note changes: the update arrives (on the session's
    // stream over HTTP, on stdout over stdio).
    const uri = `note://interop-${flavour}`;
    const heard = new Promise((resolve) => { updated = () => updates.includes(uri) && resolve(); });
    await client.subscribeResource({ uri });
    const saved = await sdk.callTool(client, {
      name: 'add_note', arguments: { name: `interop-${flavour}`, text: 'from TypeScript' } });
    assert.equal(textOf(saved), `Saved note "interop-${flavour}".`);
    await heard;
    const read = await client.readResource({ uri });
    assert.equal(read.contents[0].text, 'from TypeScript');

    // Progress the legacy way.
    const progress = [];
    const counted = await sdk.callTool(client, { name: 'countdown', arguments: { seconds: 1 } },
                                       { onprogress: (p) => progress.push(p) });
    assert.equal(textOf(counted), 'Lift-off after 1 seconds!');
    // countdown reports 0 of 1, then 1 of 1, both before its result.
    const reported = wire.filter((w) => w.message.method === 'notifications/progress')
                         .map((w) => w.message.params.progress);
    assert.deepEqual(reported, [0, 1]);
    const lastProgress = wire.findLastIndex((w) => w.message.method === 'notifications/progress');
    const countdownCall = wire.find((w) => w.message.params?.name === 'countdown').message.id;
    assert.ok(lastProgress < wire.findIndex((w) => w.from === 'server' &&
                                                   w.message.id === countdownCall));
    assert.ok(progress.length >= 1, 'the SDK passed on no progress notification');
    assert.equal(progress[0].total, 1);

    // The tool asks the user; libmcp sends a real elicitation/create and
    // runs the handler again with the answer.
    const deleted = await sdk.callTool(client, {
      name: 'delete_note', arguments: { name: `interop-${flavour}` } });
    assert.equal(textOf(deleted), `Deleted the note "interop-${flavour}".`);
    assert.equal(asked.length, 1);
    assert.match(asked[0].message, /Really delete the note "interop-/);
    assert.equal(asked[0].requestedSchema.properties.confirm.type, 'boolean');
    const ask = wire.find((w) => w.message.method === 'elicitation/create');
    assert.equal(ask.from, 'server');
    assert.equal(typeof ask.message.id, 'string');
    const answer = wire.find((w) => w.from === 'client' && w.message.id === ask.message.id);
    assert.equal(answer.message.result.action, 'accept');

    // A tool that may run as a task, called the v1 SDK's way for tasks
    // (2025-11-25's experimental tasks): tools/call with "task", a
    // CreateTaskResult, tasks/get polls, then tasks/result with the
    // related-task _meta.
    if (flavour === 'v1') {
      const events = [];
      for await (const event of client.experimental.tasks.callToolStream(
        { name: 'export_notes', arguments: { seconds: 0 } })) events.push(event);
      assert.deepEqual([...new Set(events.map((e) => e.type))], ['taskCreated', 'taskStatus', 'result'],
                       JSON.stringify(events));
      const created = events[0].task;
      assert.equal(created.status, 'working');
      assert.equal(typeof created.pollInterval, 'number');
      assert.equal(events.at(-2).task.status, 'completed');
      const exported = JSON.parse(textOf(events.at(-1).result));
      assert.equal(exported.welcome, 'Notes live in memory while the server runs.');
      const resultAnswer = wire.findLast((w) => w.from === 'server' && w.message.result?._meta);
      assert.equal(resultAnswer.message.result._meta['io.modelcontextprotocol/related-task'].taskId,
                   created.taskId);
      const listed = await client.experimental.tasks.listTasks();
      assert.ok(listed.tasks.some((t) => t.taskId === created.taskId && t.status === 'completed'));
    }

    // A missing resource is -32002 for legacy clients.
    await assert.rejects(client.readResource({ uri: 'note://nothing-here' }));
    const missingAnswer = wire.at(-1).message;
    assert.equal(missingAnswer.error.code, -32002);
    assert.equal(missingAnswer.error.data.uri, 'note://nothing-here');

    // Legacy shapes: no resultType, cache hints or reserved _meta keys
    // (but the related-task key 2025-11-25 puts on tasks/result).
    for (const { message } of wire.filter((w) => w.from === 'server' && w.message.result)) {
      assert.equal(message.result.resultType, undefined, JSON.stringify(message));
      assert.equal(message.result.ttlMs, undefined, JSON.stringify(message));
      assert.ok(!Object.keys(message.result._meta ?? {})
                      .some((k) => k.startsWith('io.modelcontextprotocol/') &&
                                   k !== 'io.modelcontextprotocol/related-task'));
    }

    if (transportKind === 'http' && transport.terminateSession) {
      await transport.terminateSession(); // DELETE: the session ends
      assert.equal(transport.sessionId, undefined);
    }
  } finally {
    await client.close();
  }
  if (stdioExit) {
    const { code, signal } = await stdioExit;
    if (code !== 0) throw new Error(`notes_server (stdio) exited with ${signal ?? code}`);
  }
}

let failure = null;
try {
  await run();
} catch (e) {
  failure = e;
}
let exitProblem = null;
if (server) {
  server.kill('SIGTERM');
  const { code, signal } = await serverExit;
  if (code !== 0) exitProblem = `notes_server exited with ${signal ? `signal ${signal}` : `status ${code}`}`;
}
clearTimeout(guard);
if (failure || exitProblem) {
  console.error('interop: FAILED:', failure ?? exitProblem);
  process.exit(1);
}
console.log(`interop: TypeScript ${flavour} client (legacy 2025-11-25) <-> notes_server over ` +
            `${transportKind}: all checks passed`);
