// Interop: the MCP Inspector's command-line client
// (@modelcontextprotocol/inspector-cli, pinned in package-lock.json; it
// speaks the legacy revision through the TypeScript SDK v1) against
// examples/notes_server, over stdio and over Streamable HTTP.
//
//   node inspector_cli_notes_server.mjs <notes_server>
//
// Lists the tools, calls echo and add, reads a resource and gets a prompt,
// each as one run of the CLI (a fresh session every time), and checks the
// JSON the CLI prints. Exits non-zero on any mismatch, and when the server
// does not stop cleanly.
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { existsSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join, resolve } from 'node:path';

import { spawnHttpServer } from './http_child.mjs';

const TIMEOUT_MS = 120_000;
const serverPath = process.argv[2] && resolve(process.argv[2]); /* the CLI runs elsewhere */
if (!serverPath) {
  console.error('usage: node inspector_cli_notes_server.mjs <notes_server>');
  process.exit(2);
}

let cliDir;
try {
  const require = createRequire(import.meta.url);
  cliDir = join(dirname(require.resolve('@modelcontextprotocol/inspector-cli/package.json')),
                'build');
} catch (e) {
  console.error('interop: FAILED: @modelcontextprotocol/inspector-cli is not installed ' +
                `(${e.message}). Run \`scripts/install-deps.sh check\` (npm ci in tests/interop).`);
  process.exit(1);
}
const cli = join(cliDir, 'index.js');
if (!existsSync(cli)) {
  console.error(`interop: FAILED: ${cli} is missing`);
  process.exit(1);
}

const guard = setTimeout(() => {
  console.error(`interop: FAILED: no result within ${TIMEOUT_MS / 1000} s`);
  process.exit(1);
}, TIMEOUT_MS);

/* One run of the CLI against `target` (a command or a URL); its JSON
 * output. It is started in its build directory, where it finds its own
 * package.json (its client identity). */
function inspect(target, args) {
  return new Promise((resolve, reject) => {
    execFile(process.execPath, [cli, ...target, ...args], { cwd: cliDir, timeout: 60_000 },
             (error, stdout, stderr) => {
               if (error) {
                 reject(new Error(`inspector-cli ${args.join(' ')}: ${error.message}\n${stderr}`));
                 return;
               }
               try {
                 resolve(JSON.parse(stdout));
               } catch (e) {
                 reject(new Error(`inspector-cli printed no JSON: ${stdout}\n${stderr}`));
               }
             });
  });
}

async function exercise(target, how) {
  const { tools } = await inspect(target, ['--method', 'tools/list']);
  assert.deepEqual(tools.map((t) => t.name).sort(),
                   ['add', 'add_note', 'countdown', 'delete_note', 'echo', 'export_notes'], how);

  const echoed = await inspect(target, ['--method', 'tools/call', '--tool-name', 'echo',
                                        '--tool-arg', 'text=hello inspector']);
  assert.deepEqual(echoed.content, [{ type: 'text', text: 'hello inspector' }], how);
  assert.equal(echoed.resultType, undefined, how);

  const sum = await inspect(target, ['--method', 'tools/call', '--tool-name', 'add',
                                     '--tool-arg', 'a=2', 'b=40']);
  assert.deepEqual(sum.structuredContent, { sum: 42 }, how);

  const index = await inspect(target, ['--method', 'resources/read', '--uri', 'notes://index']);
  assert.equal(index.contents[0].uri, 'notes://index', how);
  assert.equal(index.ttlMs, undefined, how);

  const prompt = await inspect(target, ['--method', 'prompts/get', '--prompt-name',
                                        'summarize_notes', '--prompt-args', 'style=brief']);
  assert.ok(prompt.messages.length >= 1, how);
}

async function overHttp() {
  const { server, exit: serverExit, url: serverUrl } =
    spawnHttpServer(serverPath, ['--http', '0']);
  let failure = null;
  try {
    const url = await serverUrl;
    await exercise([url, '--transport', 'http'], 'over HTTP');
  } catch (e) {
    failure = e;
  }
  server.kill('SIGTERM');
  const { code, signal } = await serverExit;
  if (failure) throw failure;
  if (code !== 0) throw new Error(`notes_server exited with ${signal ?? code}`);
}

try {
  await exercise([serverPath], 'over stdio');
  await overHttp();
} catch (e) {
  clearTimeout(guard);
  console.error('interop: FAILED:', e);
  process.exit(1);
}
clearTimeout(guard);
console.log('interop: inspector-cli <-> notes_server over stdio and HTTP: all checks passed');
