// Interop: the reference TypeScript SDK v2 client (@modelcontextprotocol/client,
// pinned in package-lock.json) against examples/notes_server over Streamable
// HTTP, at protocol revision 2026-07-28.
//
//   node ts2_client_notes_server.mjs <path to notes_server>
//
// Lists the tools, calls echo and add, and checks every answer exactly.
// Exits non-zero on any mismatch, and when the server does not stop cleanly
// on SIGTERM (a leak or sanitizer report fails the test too).
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';

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
const server = spawn(serverPath, ['--http', '0'], { stdio: ['ignore', 'inherit', 'pipe'] });
server.stderr.pipe(process.stderr);
const serverExit = new Promise((resolve) =>
  server.once('exit', (code, signal) => resolve({ code, signal })));
const guard = setTimeout(() => {
  console.error(`interop: FAILED: no result within ${TIMEOUT_MS / 1000} s`);
  server.kill('SIGKILL');
  process.exit(1);
}, TIMEOUT_MS);

async function run() {
  const url = await new Promise((resolve, reject) => {
    let buffered = '';
    server.stderr.on('data', (chunk) => {
      buffered += chunk;
      const found = buffered.match(/http:\/\/127\.0\.0\.1:\d+\/mcp/);
      if (found) resolve(found[0]);
    });
    serverExit.then(({ code, signal }) =>
      reject(new Error(`notes_server exited before printing its URL (${code ?? signal})`)));
  });

  // The v2 client speaks the legacy handshake unless told otherwise: pin it
  // to 2026-07-28 (no fallback: anything else fails loudly).
  const client = new Client({ name: 'libmcp-interop', version: '1.0.0' },
                            { versionNegotiation: { mode: { pin: '2026-07-28' } } });
  await client.connect(new StreamableHTTPClientTransport(new URL(url)));
  try {
    assert.equal(client.getNegotiatedProtocolVersion(), '2026-07-28');
    assert.deepEqual(client.getServerVersion(),
                     { name: 'notes-server', title: 'Notes', version: '0.1.0' });

    const { tools } = await client.listTools();
    assert.deepEqual(tools.map((t) => t.name),
                     ['add', 'add_note', 'countdown', 'delete_note', 'echo']);
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
  console.error(`interop: FAILED: notes_server exited with ${how}`);
  process.exit(1);
}
console.log('interop: TypeScript v2 client <-> notes_server over HTTP at 2026-07-28: ' +
            'all checks passed');
