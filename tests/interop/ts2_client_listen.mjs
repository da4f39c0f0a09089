// Interop: the reference TypeScript SDK v2 client (@modelcontextprotocol/client,
// pinned in package-lock.json) opens a subscriptions/listen stream to a
// libmcp server over Streamable HTTP, at protocol revision 2026-07-28, and
// hears of a tool added while it listens.
//
//   node ts2_client_listen.mjs <path to client_test_server>
//
// client_test_server (tests/integration/servers) registers one more tool,
// added_<n>, whenever its add_tool tool is called. The client listens for
// toolsListChanged through client.listen(), calls add_tool, and checks the
// acknowledgement and the notifications/tools/list_changed that follows,
// both tagged with the listen request's id, and then that tools/list shows
// the new tool. The requests the client puts on the wire are recorded
// through its fetch, the messages it receives at its transport. Exits
// non-zero on any mismatch, and when the server does not stop cleanly on
// SIGTERM (a leak or sanitizer report fails the test too).
import assert from 'node:assert/strict';

import { spawnHttpServer } from './http_child.mjs';

const TIMEOUT_MS = 60_000;
const serverPath = process.argv[2];
if (!serverPath) {
  console.error('usage: node ts2_client_listen.mjs <client_test_server>');
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
const { Client, StreamableHTTPClientTransport, SUBSCRIPTION_ID_META_KEY } = sdk;

// `client_test_server --http` picks a free port and names its URL on stderr.
const { server, exit: serverExit, url: serverUrl } = spawnHttpServer(serverPath, ['--http']);
const guard = setTimeout(() => {
  console.error(`interop: FAILED: no result within ${TIMEOUT_MS / 1000} s`);
  server.kill('SIGKILL');
  process.exit(1);
}, TIMEOUT_MS);

async function run() {
  const url = await serverUrl;

  // Every JSON-RPC message the client POSTs, with its Mcp-Method header.
  const sent = [];
  const recordingFetch = (input, init) => {
    if (init?.method === 'POST' && typeof init.body === 'string')
      sent.push({ message: JSON.parse(init.body),
                  mcpMethod: new Headers(init.headers).get('mcp-method') });
    return fetch(input, init);
  };
  const transport = new StreamableHTTPClientTransport(new URL(url), { fetch: recordingFetch });
  const client = new Client({ name: 'libmcp-interop', version: '1.0.0' },
                            { versionNegotiation: { mode: { pin: '2026-07-28' } } });

  // The change notifications a listen stream delivers go to the client's
  // ordinary notification handlers.
  const changes = [];
  let changed;
  const firstChange = new Promise((resolve) => { changed = resolve; });
  client.setNotificationHandler('notifications/tools/list_changed', (notification) => {
    changes.push(notification);
    changed();
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
    assert.deepEqual(client.getServerCapabilities().tools, { listChanged: true });
    const before = await client.listTools();
    assert.deepEqual(before.tools.map((t) => t.name).sort(), ['add_tool', 'bump', 'reads', 'survey']);

    // listen() resolves on the acknowledgement, with the filter the server
    // honours (an acknowledgement it cannot match to the request never
    // comes: the timeout says so well before the test's guard).
    const subscription = await client.listen({ toolsListChanged: true }, { timeout: 10_000 });
    assert.deepEqual(subscription.honoredFilter, { toolsListChanged: true });
    const listens = sent.filter(({ message }) => message.method === 'subscriptions/listen');
    assert.equal(listens.length, 1);
    const listen = listens[0].message;
    assert.equal(listens[0].mcpMethod, 'subscriptions/listen');
    assert.deepEqual(listen.params.notifications, { toolsListChanged: true });
    const subscriptionId = listen.id;
    const acks = received.filter((m) => m.method === 'notifications/subscriptions/acknowledged');
    assert.equal(acks.length, 1);
    assert.deepEqual(acks[0].params.notifications, { toolsListChanged: true });
    assert.equal(acks[0].params._meta?.[SUBSCRIPTION_ID_META_KEY], subscriptionId,
                 'the acknowledgement is tagged with the subscription id');
    assert.equal(changes.length, 0, 'no change before a tool is added');

    const added = await client.callTool({ name: 'add_tool', arguments: {} });
    assert.deepEqual(added.content, [{ type: 'text', text: 'added added_1' }]);
    await firstChange;
    const notices = received.filter((m) => m.method === 'notifications/tools/list_changed');
    assert.ok(notices.length >= 1);
    for (const notice of notices)
      assert.equal(notice.params?._meta?.[SUBSCRIPTION_ID_META_KEY], subscriptionId,
                   'list_changed is tagged with the subscription id');

    // The server lets the client cache tools/list for a minute; the
    // notification dropped the cached list, so this one is asked again.
    const after = await client.listTools();
    assert.deepEqual(after.tools.map((t) => t.name).sort(),
                     ['add_tool', 'added_1', 'bump', 'reads', 'survey']);
    assert.equal(sent.filter(({ message }) => message.method === 'tools/list').length, 2);
    const call = await client.callTool({ name: 'added_1', arguments: {} });
    assert.deepEqual(call.content, [{ type: 'text', text: 'added' }]);

    // Closing aborts the stream and cancels the listen request by its id.
    await subscription.close();
    assert.equal(await subscription.closed, 'local');
    const cancels = sent.filter(({ message }) => message.method === 'notifications/cancelled');
    assert.equal(cancels.length, 1);
    assert.equal(cancels[0].message.params.requestId, subscriptionId);
  } finally {
    await client.close();
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
  console.error(`interop: FAILED: client_test_server exited with ${how}`);
  process.exit(1);
}
console.log('interop: TypeScript v2 client listens to client_test_server over HTTP at ' +
            '2026-07-28: all checks passed');
