// The benchmark runner behind `make bench` (bench/run.sh BUILD_DIR).
//
// Runs every measurement of docs/benchmarks.md side by side in one run --
// libmcp, the TypeScript SDK v2 peers (bench/peers, pinned), a bare
// libmicrohttpd program and a bare C pipe ping-pong -- one after another,
// never at the same time, and reports ratios: on a shared 2-core machine
// absolute numbers drift from run to run, ratios measured minutes apart
// hold.
//
// Prints a table and writes BUILD_DIR/bench-results.json;
// `node bench/run.mjs --report FILE` prints the tables of such a file again.
//
// Environment: BENCH_SECONDS (wrk duration per cell, default 5),
// BENCH_SCALE (multiplies every call count, default 1; 0.1 for a quick look).
import { spawn, spawnSync } from 'node:child_process';
import { readFileSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const here = path.dirname(fileURLToPath(import.meta.url));
const build = path.resolve(process.argv[2] ?? 'build/bench');
const bin = (name) => path.join(build, 'bench', name);
const peer = (name) => path.join(here, 'peers', name);
const seconds = Number(process.env.BENCH_SECONDS ?? 5);
const scale = Number(process.env.BENCH_SCALE ?? 1);
const count = (n) => Math.max(10, Math.round(n * scale));

const LIBMCP = [bin('bench_server')];
const TS = ['node', peer('ts_server.mjs')];
const LIBMCP_CLIENT = [bin('bench_client')];
const TS_CLIENT = ['node', peer('ts_client.mjs')];

// ---------------------------------------------------------------------------
// Processes

function log(line) {
  process.stderr.write(`bench: ${line}\n`);
}

// Runs a command to completion; its last stdout line is a JSON object.
function measure(argv, env = {}) {
  const r = spawnSync(argv[0], argv.slice(1), {
    env: { ...process.env, ...env }, encoding: 'utf8', maxBuffer: 1 << 26,
    stdio: ['ignore', 'pipe', 'inherit'], timeout: 600_000
  });
  const last = (r.stdout ?? '').trim().split('\n').pop();
  if (r.status !== 0 || !last?.startsWith('{'))
    throw new Error(`${argv.join(' ')} failed (status ${r.status ?? r.signal})`);
  return JSON.parse(last);
}

// Starts a server that prints its URL as the first stdout line.
function startServer(argv) {
  return new Promise((resolve, reject) => {
    const proc = spawn(argv[0], argv.slice(1), { stdio: ['ignore', 'pipe', 'inherit'] });
    let out = '';
    proc.stdout.on('data', (chunk) => {
      out += chunk;
      if (out.includes('\n')) resolve({ proc, url: out.split('\n')[0].trim() });
    });
    proc.once('exit', (code) => reject(new Error(`${argv.join(' ')} exited (${code})`)));
  });
}

async function stopServer(server) {
  const gone = new Promise((resolve) => server.proc.once('exit', resolve));
  server.proc.kill('SIGTERM');
  const timer = setTimeout(() => server.proc.kill('SIGKILL'), 5000);
  await gone;
  clearTimeout(timer);
}

// A failed request from libmcp or the bare ceiling ends the run. The
// TypeScript peer, at 64 connections, now and then lets a request pass
// wrk's 2 s timeout (its p99 there is near a second): its row keeps the
// count, and the table says so.
function wrk(url, connections, op, duration = seconds, tolerateErrors = false) {
  const r = measure(['wrk', '-t1', `-c${connections}`, `-d${duration}s`, '-s',
                     path.join(here, 'mcp_call.lua'), url], { MCP_OP: op });
  if (r.non2xx || (r.errors && !tolerateErrors))
    throw new Error(`wrk saw ${r.errors} errors, ${r.non2xx} non-2xx at ${url}`);
  if (r.errors) log(`wrk saw ${r.errors} errors (timeouts) at ${url}; kept in the row`);
  return r;
}

// ---------------------------------------------------------------------------
// The measurements

const results = { started: new Date().toISOString(), machine: machine(), seconds, scale };

function machine() {
  const first = (cmd, args) => {
    const r = spawnSync(cmd, args, { encoding: 'utf8' }); // wrk -v exits 1
    return (r.stdout || r.stderr || 'unknown').split('\n')[0].trim();
  };
  return {
    cpu: os.cpus()[0]?.model, cpus: os.cpus().length, memory_gib: +(os.totalmem() / 2 ** 30).toFixed(1),
    kernel: os.release(), node: process.version, wrk: first('wrk', ['-v']),
    libmicrohttpd: first('pkg-config', ['--modversion', 'libmicrohttpd']),
    jansson: first('pkg-config', ['--modversion', 'jansson']),
    load_before: os.loadavg().map((x) => +x.toFixed(2))
  };
}

// 1. HTTP tools/call: the servers in turn at each concurrency, three
// rounds, each number of a server's row the median of its three cells.
// On this 2-core machine wrk and the server share the CPUs, and one cell
// of a server can differ from the next by 30% as the scheduler places the
// threads; in alternating rounds such a burst lands on neighbours in turn
// rather than on one server's only cell.
//
// The ceiling runs twice. As libmicrohttpd's thread pool does it (`mhd`),
// the event threads race for new connections and each keeps what it won:
// wrk's burst of 16 connections lands all on one thread in some cells and
// split in others, and the first layout is the faster one here (one busy
// server thread beside wrk; measured 126k-142k req/s against 94k-114k).
// `mhd_spread` hands the connections to its threads in turn, as libmcp's
// engine did with two event threads. `mhd_one` is one thread, the layout
// `mhd` forms when it is lucky, measured on purpose, and libmcp's own
// layout on two CPUs since its event threads run the handlers (one event
// thread there). The target is stated against the ceiling: at each
// concurrency the higher of `mhd` and `mhd_one`.
const HTTP_ROUNDS = 3;
async function httpEcho() {
  const servers = {
    libmcp: await startServer([...LIBMCP, 'http']),
    // The same server on the libmicrohttpd engine (the one TLS uses): the
    // built-in engine's before and after.
    libmcp_mhd: await startServer([...LIBMCP, 'http', '--engine', 'libmicrohttpd']),
    ts: await startServer([...TS, 'http']),
    mhd: await startServer([bin('bench_mhd_fixed')]),
    mhd_spread: await startServer([bin('bench_mhd_fixed'), '--spread']),
    mhd_one: await startServer([bin('bench_mhd_fixed'), '--threads', '1'])
  };
  const cells = [];
  const cell = (server, c, url, op, tolerate = false) => {
    log(`http ${op} c=${c} ${server}`);
    cells.push({ server, connections: c, ...wrk(url, c, op, seconds, tolerate) });
  };
  try {
    for (const s of Object.values(servers)) wrk(s.url, 16, 'echo', 1); // warm-up (JIT, pools)
    for (const c of [1, 16, 64]) {
      for (let round = 0; round < HTTP_ROUNDS; round++) {
        for (const [name, s] of Object.entries(servers)) {
          cell(name, c, s.url, 'echo', name === 'ts');
          // The same tool registered run_inline: no hand-off to the worker pool.
          if (name === 'libmcp' || name === 'libmcp_mhd')
            cell(`${name}_inline`, c, s.url, 'echo_inline');
        }
      }
    }
  } finally {
    for (const s of Object.values(servers)) await stopServer(s);
  }
  // Each number of a row is the median of its cells' numbers, each taken
  // on its own: a cell with a good rate may have a bad tail, and the
  // other way round.
  const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];
  results.http = [];
  for (const c of [1, 16, 64]) {
    for (const server of new Set(cells.map((x) => x.server))) {
      const runs = cells.filter((x) => x.server === server && x.connections === c);
      const row = { server, connections: c, runs };
      for (const key of ['rps', 'p50_us', 'p99_us'])
        row[key] = median(runs.map((r) => r[key]));
      row.errors = runs.reduce((n, r) => n + r.errors, 0);
      results.http.push(row);
    }
  }
}

// 1d. The 75% target, head to head. Table 1 runs eight servers in turn, so
// libmcp's cell and the ceiling's are half a minute apart, and on this
// shared machine the host's load moves either by a third in that time (one
// run: libmcp 68-78k, the ceiling 94-100k; a run of alternating cells
// minutes later: both 66-79k). Here the three contenders run in adjacent
// cells, their order rotating every round so none is always first, and
// each round gives one ratio: libmcp against the better of the two bare
// layouts in that round (the stricter ceiling: the maximum of two noisy
// cells). The target is the median of those ratios; every round is shown.
const HEAD_ROUNDS = 9;
async function headToHead() {
  const servers = {
    libmcp: await startServer([...LIBMCP, 'http']),
    mhd_one: await startServer([bin('bench_mhd_fixed'), '--threads', '1']),
    mhd: await startServer([bin('bench_mhd_fixed')])
  };
  const names = Object.keys(servers);
  const rounds = [];
  try {
    for (const s of Object.values(servers)) wrk(s.url, 16, 'echo', 1); // warm-up
    for (let round = 0; round < HEAD_ROUNDS; round++) {
      const order = names.map((_, i) => names[(i + round) % names.length]);
      const cells = {};
      for (const name of order) {
        log(`http head to head, round ${round + 1}: ${name}`);
        cells[name] = wrk(servers[name].url, 16, 'echo', seconds);
      }
      rounds.push({ order, cells });
    }
  } finally {
    for (const s of Object.values(servers)) await stopServer(s);
  }
  results.head_to_head = rounds.map(({ order, cells }) => {
    const best = cells.mhd_one.rps >= cells.mhd.rps ? 'mhd_one' : 'mhd';
    return { order, libmcp: cells.libmcp, mhd_one: cells.mhd_one, mhd: cells.mhd, ceiling: best,
             ratio: cells.libmcp.rps / cells[best].rps };
  });
}

// 2. stdio round trips: every client with every server, and the ceiling:
// bare C processes passing the same lines through pipes, no MCP at all.
// Where the scheduler puts the two processes decides it (one CPU: two
// context switches a round trip; two: two cross-CPU wake-ups), and it
// chooses run by run, so the unpinned ceiling is the median of three runs,
// and both placements are measured pinned beside it. Every pair runs three
// times too, with fresh processes, and the median is its row: where the
// scheduler puts a pair's threads moves it by up to 2x from run to run.
// libmcp's client and server wait actively for a moment before sleeping
// (spin_us, default 50 µs), so the ceiling is measured waiting that way
// too, and the libmcp pair without it (spin_us -1) beside the default.
const SPIN_DEFAULT_US = 50;
function stdioPairs() {
  const ceiling = (cpus, spin = 0) => measure([bin('bench_pipe_ceiling'), '--calls', String(count(20000)),
                                               '--cpus', cpus, '--spin-us', String(spin)]);
  const median = (run) => {
    const runs = [0, 1, 2].map(run).sort((a, b) => a.calls_per_s - b.calls_per_s);
    return { ...runs[1], runs };
  };
  log('stdio pipe ceiling: bare C ping-pong, unpinned (3 runs), one CPU, two CPUs, active wait (3 runs)');
  results.stdio_ceiling = { any: median(() => ceiling('any')), one: ceiling('one'), two: ceiling('two'),
                            spin: median(() => ceiling('any', SPIN_DEFAULT_US)) };

  const off = ['--spin-us', '-1'];
  const pairs = [
    ['libmcp', 'libmcp', 'echo', true, LIBMCP_CLIENT, [...LIBMCP, 'stdio'], 20000],
    ['libmcp', 'libmcp', 'echo_inline', true, [...LIBMCP_CLIENT, '--op', 'echo_inline'], [...LIBMCP, 'stdio'], 20000],
    ['libmcp', 'libmcp', 'echo', false, [...LIBMCP_CLIENT, ...off], [...LIBMCP, 'stdio', ...off], 20000],
    ['ts', 'ts', 'echo', false, TS_CLIENT, [...TS, 'stdio'], 5000],
    ['libmcp', 'ts', 'echo', true, LIBMCP_CLIENT, [...TS, 'stdio'], 5000],
    ['ts', 'libmcp', 'echo', true, TS_CLIENT, [...LIBMCP, 'stdio'], 5000]
  ];
  results.stdio = [];
  for (const inflight of [1, 8]) {
    for (const [client, server, op, spin, c, s, n] of pairs) {
      log(`stdio ${client} client -> ${server} server, ${op}${spin ? '' : ', no active wait'}, ${inflight} in flight`);
      const calls = count(n);
      const r = median(() => measure([...c, '--calls', String(calls), '--inflight', String(inflight), '--', ...s]));
      results.stdio.push({ client, server, op, spin, inflight, ...r });
    }
  }
}

// 3. Memory of the servers, from outside.
// The idle RSS of a server that prints its URL, a second after it did.
async function idleRssKb(argv) {
  const server = await startServer(argv);
  await new Promise((resolve) => setTimeout(resolve, 1000));
  const status = readFileSync(`/proc/${server.proc.pid}/status`, 'utf8');
  await stopServer(server);
  return Number(/VmRSS:\s+(\d+)/.exec(status)[1]);
}

// The idle RSS of a stdio server, a second after it started (it waits for
// its first request on the pipe; closing the pipe ends it).
async function idleStdioRssKb(argv) {
  const proc = spawn(argv[0], argv.slice(1), { stdio: ['pipe', 'ignore', 'inherit'] });
  const gone = new Promise((resolve) => proc.once('exit', resolve));
  await new Promise((resolve) => setTimeout(resolve, 1000));
  const status = readFileSync(`/proc/${proc.pid}/status`, 'utf8');
  proc.stdin.end();
  await gone;
  return Number(/VmRSS:\s+(\d+)/.exec(status)[1]);
}

async function memory() {
  log('memory: libmcp server (100,000 calls, 1,000 listen streams)');
  results.memory = {
    libmcp: measure([bin('bench_memory'), '--calls', String(count(100000)), '--streams', '1000',
                     '--', ...LIBMCP, 'http'])
  };
  log('memory: TypeScript server (20,000 calls, 1,000 listen streams)');
  try {
    results.memory.ts = measure([bin('bench_memory'), '--calls', String(count(20000)), '--streams', '1000',
                                 '--', ...TS, 'http']);
  } catch (e) {
    log(`memory: TypeScript server: ${e.message}`);
  }
  // The floor under any server on libmicrohttpd: libc, libmicrohttpd and
  // the GnuTLS libraries it links and initialises; and the libmcp server
  // on that engine.
  log('memory: bare libmicrohttpd program, idle; libmcp on the libmicrohttpd engine, idle');
  results.memory.mhd_idle_kb = await idleRssKb([bin('bench_mhd_fixed')]);
  results.memory.libmcp_on_mhd_idle_kb = await idleRssKb([...LIBMCP, 'http', '--engine', 'libmicrohttpd']);
  // bench_server is linked statically; a program linked with the shared
  // libraries maps what they need: libmcp-server, or libmcp with libcurl.
  log('memory: the server linked with libmcp-server.so and with libmcp.so, idle');
  results.memory.shared_server_idle_kb = await idleRssKb([bin('bench_server_server'), 'http']);
  results.memory.shared_whole_idle_kb = await idleRssKb([bin('bench_server_whole'), 'http']);
  // Over stdio libmicrohttpd is never loaded (src/lazy_library.h).
  log('memory: the server over stdio, idle (static, and with libmcp-server.so)');
  results.memory.stdio_idle_kb = await idleStdioRssKb([...LIBMCP, 'stdio']);
  results.memory.shared_server_stdio_idle_kb =
    await idleStdioRssKb([bin('bench_server_server'), 'stdio']);
}

// 4. MRTR: sealing/opening requestState, and a two-round call over HTTP.
// A plain and a two-round run alternate three times and each row is the
// median by p50: one run of each, one after the other, gave ratios from
// 1.5x to 4.3x on this shared machine, as the scheduler placed the client's
// and the server's threads differently from run to run.
async function mrtr() {
  log('mrtr: seal/open');
  results.mrtr = { codec: measure([bin('bench_mrtr'), '--rounds', String(count(50000))]) };
  const median = (runs) => {
    const sorted = [...runs].sort((a, b) => a.p50_us - b.p50_us);
    return { ...sorted[1], runs };
  };
  for (const [name, argv] of [['libmcp', LIBMCP], ['ts', TS]]) {
    const s = await startServer([...argv, 'http']);
    try {
      log(`mrtr: plain vs two-round call over HTTP, ${name} server (3 alternating rounds)`);
      const n = String(count(name === 'libmcp' ? 2000 : 400));
      const run = (op) => measure([...LIBMCP_CLIENT, '--calls', n, '--op', op, '--http', s.url]);
      const plain = [], twoRound = [];
      for (let i = 0; i < 3; i++) {
        plain.push(run('echo'));
        twoRound.push(run('confirm'));
      }
      results.mrtr[name] = { plain: median(plain), two_round: median(twoRound) };
    } finally {
      await stopServer(s);
    }
  }
}

// 5. Large answers: tools/list of 1,000 tools, a 1 MB resources/read.
async function large() {
  results.large = [];
  for (const [name, argv] of [['libmcp', LIBMCP], ['ts', TS]]) {
    const s = await startServer([...argv, 'http', '--tools', '1000']);
    try {
      for (const op of ['list', 'read']) {
        log(`large: ${op} ${name}`);
        wrk(s.url, 4, op, 1);
        results.large.push({ server: name, op, connections: 4, ...wrk(s.url, 4, op) });
      }
    } finally {
      await stopServer(s);
    }
  }
}

// 6. Client connect (+ first call): pinned modern, and the auto era.
async function connect() {
  results.connect = [];
  const http = await startServer([...LIBMCP, 'http']);
  try {
    for (const era of ['modern', 'auto']) {
      for (const [transport, target] of [['stdio', ['--', ...LIBMCP, 'stdio']], ['http', ['--http', http.url]]]) {
        log(`connect: ${era} over ${transport}`);
        const r = measure([...LIBMCP_CLIENT, '--era', era, '--connects', String(count(transport === 'http' ? 200 : 50)),
                           ...target]);
        results.connect.push({ era, transport, ...r });
      }
    }
  } finally {
    await stopServer(http);
  }
}

// ---------------------------------------------------------------------------
// Report

const fmt = (x, digits = 0) => (x === undefined || x === null || Number.isNaN(x) ? '-' :
  Number(x).toLocaleString('en-US', { maximumFractionDigits: digits, minimumFractionDigits: digits }));
const us = (x) => (x >= 1000 ? `${fmt(x / 1000, 2)} ms` : `${fmt(x)} µs`);
const ratio = (a, b) => (a && b ? `${fmt(a / b, a / b < 10 ? 2 : 1)}x` : '-');

function table(title, header, rows) {
  const widths = header.map((h, i) => Math.max(h.length, ...rows.map((r) => String(r[i]).length)));
  const line = (cells) => cells.map((c, i) => (i === 0 ? String(c).padEnd(widths[i]) : String(c).padStart(widths[i]))).join('  ');
  console.log(`\n${title}\n${line(header)}\n${widths.map((w) => '-'.repeat(w)).join('  ')}`);
  for (const r of rows) console.log(line(r));
}

function report() {
  const targets = [];
  const target = (what, ok, value) => targets.push({ what, met: ok, value });

  const h = (server, c) => results.http.find((r) => r.server === server && r.connections === c);
  // The ceiling: bare libmicrohttpd in whichever layout did more.
  const ceiling = (c) => (h('mhd_one', c).rps > h('mhd', c).rps ? h('mhd_one', c) : h('mhd', c));
  table('1. HTTP tools/call echo (wrk, keep-alive): requests/s, p50, p99; bare MHD: the ceiling (table 1c)',
        ['connections', 'libmcp', 'p50', 'p99', 'inline', 'p50', 'p99', 'TS v2', 'p50', 'p99', 'bare MHD',
         'libmcp/TS', 'inline/TS', 'libmcp/MHD', 'inline/MHD'],
        [1, 16, 64].map((c) => {
          const [l, i, t, m] = [h('libmcp', c), h('libmcp_inline', c), h('ts', c), ceiling(c)];
          return [c, fmt(l.rps), us(l.p50_us), us(l.p99_us), fmt(i.rps), us(i.p50_us), us(i.p99_us),
                  fmt(t.rps), us(t.p50_us), us(t.p99_us), fmt(m.rps), ratio(l.rps, t.rps), ratio(i.rps, t.rps),
                  `${fmt(100 * l.rps / m.rps)}%`, `${fmt(100 * i.rps / m.rps)}%`];
        }));
  table('1b. The same libmcp server on the libmicrohttpd engine (TLS uses it): requests/s, p50, p99',
        ['connections', 'on MHD', 'p50', 'p99', 'inline', 'p50', 'p99', 'built-in/MHD engine',
         'inline: built-in/MHD engine', 'on MHD/bare MHD', 'inline on MHD/bare MHD'],
        [1, 16, 64].map((c) => {
          const [l, i, b, bi, m] = [h('libmcp_mhd', c), h('libmcp_mhd_inline', c), h('libmcp', c),
                                    h('libmcp_inline', c), ceiling(c)];
          return [c, fmt(l.rps), us(l.p50_us), us(l.p99_us), fmt(i.rps), us(i.p50_us), us(i.p99_us),
                  ratio(b.rps, l.rps), ratio(bi.rps, i.rps),
                  `${fmt(100 * l.rps / m.rps)}%`, `${fmt(100 * i.rps / m.rps)}%`];
        }));
  const pct = (a, b) => `${fmt(100 * a / b)}%`;
  // A target's own value shows a decimal: 74.8% must not read as 75%.
  const pct1 = (a, b) => `${fmt(100 * a / b, 1)}%`;
  const perRound = (a, b) => a.runs.map((r, i) => pct(r.rps, b.runs[i].rps)).join(', ');
  table('1c. The ceiling: bare libmicrohttpd, two threads racing for connections (pool), one thread, ' +
        'two threads dealt connections in turn (spread)',
        ['connections', 'pool', 'p99', 'one thread', 'p99', 'spread', 'p99', 'libmcp/one', 'inline/one',
         'libmcp/spread', 'libmcp/ceiling, by round', 'libmcp/spread, by round'],
        [1, 16, 64].map((c) => {
          const [l, i, m, one, sp] = [h('libmcp', c), h('libmcp_inline', c), h('mhd', c), h('mhd_one', c),
                                      h('mhd_spread', c)];
          return [c, fmt(m.rps), us(m.p99_us), fmt(one.rps), us(one.p99_us), fmt(sp.rps), us(sp.p99_us),
                  pct(l.rps, one.rps), pct(i.rps, one.rps), pct(l.rps, sp.rps), perRound(l, ceiling(c)),
                  perRound(l, sp)];
        }));
  for (const r of results.http.filter((x) => x.errors))
    console.log(`(${r.server} at ${r.connections} connections: ${r.errors} requests timed out in wrk)`);
  const hh = results.head_to_head ?? [];
  const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];
  if (hh.length)
    table('1d. Head to head at 16 connections: libmcp and the two bare layouts in adjacent cells, ' +
          'order rotating; requests/s, and libmcp against the better layout of its round',
          ['round', 'order', 'libmcp', 'p99', 'one thread', 'pool', 'libmcp/better'],
          hh.map((r, i) => [i + 1, r.order.map((n) => ({ libmcp: 'L', mhd_one: '1', mhd: 'P' })[n]).join(''),
                            fmt(r.libmcp.rps), us(r.libmcp.p99_us), fmt(r.mhd_one.rps), fmt(r.mhd.rps),
                            `${fmt(100 * r.ratio)}%`]));
  const [l16, i16, t16, m16] = [h('libmcp', 16), h('libmcp_inline', 16), h('ts', 16), ceiling(16)];
  target('HTTP c=16: >= 25x the TypeScript v2 server', l16.rps >= 25 * t16.rps, ratio(l16.rps, t16.rps));
  if (hh.length) {
    const ratios = hh.map((r) => r.ratio);
    const mid = median(ratios);
    target('HTTP c=16: >= 75% of bare libmicrohttpd (1d: median of rounds)', mid >= 0.75,
           `${fmt(100 * mid, 1)}% (rounds ${fmt(100 * Math.min(...ratios))}% to ` +
           `${fmt(100 * Math.max(...ratios))}%, ${ratios.filter((x) => x >= 0.75).length} of ` +
           `${ratios.length} at 75% or more)`);
  }
  target(`${hh.length ? '  (info) in table 1, medians' : 'HTTP c=16: >= 75% of bare libmicrohttpd'}`,
         hh.length ? null : l16.rps >= 0.75 * m16.rps,
         `${pct1(l16.rps, m16.rps)} of ${m16.server === 'mhd_one' ? 'one thread' : 'the pool'} ` +
         `(rounds ${perRound(l16, m16)})`);
  target('  (info) of bare MHD, pool / one thread', null,
         `${pct(l16.rps, h('mhd', 16).rps)} / ${pct(l16.rps, h('mhd_one', 16).rps)}`);
  target('  (info) of bare MHD spread over two threads', null,
         `${pct(l16.rps, h('mhd_spread', 16).rps)} (rounds ${perRound(l16, h('mhd_spread', 16))})`);
  target('HTTP c=16: p99 < 2 ms', l16.p99_us < 2000, us(l16.p99_us));
  target('  the same, run_inline tool: >= 25x TypeScript', i16.rps >= 25 * t16.rps, ratio(i16.rps, t16.rps));
  target('  the same, run_inline tool: >= 75% of bare MHD', i16.rps >= 0.75 * m16.rps,
         pct1(i16.rps, m16.rps));
  target('  the same, run_inline tool: p99 < 2 ms', i16.p99_us < 2000, us(i16.p99_us));

  const st = (client, server, inflight, op = 'echo', spin = client !== 'ts' || server !== 'ts') =>
    results.stdio.find((r) => r.client === client && r.server === server && r.inflight === inflight &&
                              r.op === op && r.spin === spin);
  const ceil = results.stdio_ceiling;
  const tsSeq = st('ts', 'ts', 1).calls_per_s;
  // A libmcp pair compares with the ceiling that waits as it does; the
  // crossed pairs wait actively on one side only, so they get no share.
  const ceilingFor = (r) => r.client !== r.server ? null : r.spin ? ceil.spin : ceil.any;
  const ofCeiling = (r) => `${fmt(100 * r.calls_per_s / ceilingFor(r).calls_per_s)}%`;
  const label = (r) => `${r.client} -> ${r.server}${r.op === 'echo' ? '' : ` (${r.op})`}` +
                       `${r.client === 'libmcp' && r.server === 'libmcp' && !r.spin ? ' (no active wait)' : ''}`;
  table('2. stdio tools/call echo round trips: calls/s, p50, p99',
        ['client -> server', 'in flight', 'calls/s', 'p50', 'p99', 'vs TS pair', '% of pipe ceiling'], [
          ...[['pipe ceiling (bare C, no MCP)', ceil.any], ['  pinned to one CPU', ceil.one],
              ['  pinned to two CPUs', ceil.two],
              [`  waiting actively ${SPIN_DEFAULT_US} µs, as libmcp`, ceil.spin]].map(([name, r]) =>
            [name, 1, fmt(r.calls_per_s), us(r.p50_us), us(r.p99_us), ratio(r.calls_per_s, tsSeq),
             r === ceil.any || r === ceil.spin ? '100%' : '-']),
          ...results.stdio.map((r) => [label(r), r.inflight, fmt(r.calls_per_s), us(r.p50_us), us(r.p99_us),
                                       ratio(r.calls_per_s, st('ts', 'ts', r.inflight).calls_per_s),
                                       r.inflight === 1 && ceilingFor(r) ? ofCeiling(r) : '-'])
        ]);
  const [lSeq, iSeq, nSeq] = [st('libmcp', 'libmcp', 1), st('libmcp', 'libmcp', 1, 'echo_inline'),
                              st('libmcp', 'libmcp', 1, 'echo', false)];
  const seq = lSeq.calls_per_s / tsSeq;
  target('stdio sequential: >= 8x the TypeScript v2 pair', seq >= 8, ratio(seq, 1));
  target('  the same, run_inline tool', iSeq.calls_per_s >= 8 * tsSeq, ratio(iSeq.calls_per_s, tsSeq));
  // Not targets: what the active wait is worth, and what the pipes allow.
  target('  (info) libmcp pair with no active wait (spin_us -1)', null, ratio(nSeq.calls_per_s, tsSeq));
  target('  (info) pipe ceiling vs the TypeScript v2 pair', null,
         `${ratio(ceil.any.calls_per_s, tsSeq)} sleeping, ${ratio(ceil.spin.calls_per_s, tsSeq)} waiting ` +
         `actively (one CPU ${ratio(ceil.one.calls_per_s, tsSeq)}, two CPUs ${ratio(ceil.two.calls_per_s, tsSeq)})`);
  target('  (info) libmcp pair: % of the pipe ceiling that waits alike', null,
         `${ofCeiling(lSeq)} (echo_inline ${ofCeiling(iSeq)}, no active wait ${ofCeiling(nSeq)})`);
  results.stdio_vs_ceiling = {
    ceiling_calls_per_s: ceil.any.calls_per_s, ceiling_spin_calls_per_s: ceil.spin.calls_per_s,
    ts_pair_calls_per_s: tsSeq,
    ceiling_over_ts: ceil.any.calls_per_s / tsSeq, ceiling_spin_over_ts: ceil.spin.calls_per_s / tsSeq,
    ceiling_one_cpu_over_ts: ceil.one.calls_per_s / tsSeq,
    ceiling_two_cpus_over_ts: ceil.two.calls_per_s / tsSeq, libmcp_over_ts: seq,
    libmcp_inline_over_ts: iSeq.calls_per_s / tsSeq, libmcp_no_spin_over_ts: nSeq.calls_per_s / tsSeq,
    libmcp_pct_of_ceiling: 100 * lSeq.calls_per_s / ceil.spin.calls_per_s,
    libmcp_inline_pct_of_ceiling: 100 * iSeq.calls_per_s / ceil.spin.calls_per_s,
    libmcp_no_spin_pct_of_ceiling: 100 * nSeq.calls_per_s / ceil.any.calls_per_s
  };

  const mem = results.memory;
  const memRow = (name, m) => m ? [name, fmt(m.idle_kb), fmt(m.idle_anon_kb), fmt(m.warm_kb), fmt(m.calls_kb),
                                   fmt(m.calls), fmt(m.calls_kb - m.warm_kb), fmt(m.per_stream_bytes / 1024, 1)]
                                : [name, '-', '-', '-', '-', '-', '-', '-'];
  table('3. Server memory (KiB; RSS from /proc, anon = RSS less shared-library pages)',
        ['server', 'idle RSS', 'idle anon', 'warm', 'after calls', 'calls', 'growth', 'KiB/listen stream'],
        [memRow('libmcp', mem.libmcp), memRow('TS v2', mem.ts)]);
  const clientRss = (client) => st(client, client, 1).client_rss_kb;
  console.log(`client RSS after the sequential stdio run: libmcp ${fmt(clientRss('libmcp'))} KiB, ` +
              `TS v2 ${fmt(clientRss('ts'))} KiB`);
  console.log(`bare libmicrohttpd program, idle RSS: ${fmt(mem.mhd_idle_kb)} KiB; ` +
              `the libmcp server on the libmicrohttpd engine: ${fmt(mem.libmcp_on_mhd_idle_kb)} KiB`);
  console.log(`the libmcp server linked with libmcp-server.so, idle RSS: ` +
              `${fmt(mem.shared_server_idle_kb)} KiB; with libmcp.so: ${fmt(mem.shared_whole_idle_kb)} KiB`);
  console.log(`the libmcp server over stdio, idle RSS: ${fmt(mem.stdio_idle_kb)} KiB; ` +
              `with libmcp-server.so: ${fmt(mem.shared_server_stdio_idle_kb)} KiB`);
  target('idle server RSS < 4 MB, serving HTTP', mem.libmcp.idle_kb < 4096,
         `${fmt(mem.libmcp.idle_kb)} KiB (anon ${fmt(mem.libmcp.idle_anon_kb)} KiB)`);
  target('idle server RSS < 4 MB, serving stdio', mem.stdio_idle_kb < 4096,
         `${fmt(mem.stdio_idle_kb)} KiB`);
  target('  (info) bare libmicrohttpd program, idle RSS', null, `${fmt(mem.mhd_idle_kb)} KiB`);
  target('  (info) linked with libmcp-server.so / libmcp.so', null,
         `${fmt(mem.shared_server_idle_kb)} / ${fmt(mem.shared_whole_idle_kb)} KiB`);
  target('< 16 KiB per idle listen stream', mem.libmcp.per_stream_bytes < 16384,
         `${fmt(mem.libmcp.per_stream_bytes / 1024, 1)} KiB`);
  // "No growth": less than 1 byte per call between warm and the end.
  target('no growth over 100,000 calls', (mem.libmcp.calls_kb - mem.libmcp.warm_kb) * 1024 < mem.libmcp.calls,
         `${fmt(mem.libmcp.calls_kb - mem.libmcp.warm_kb)} KiB`);

  const m = results.mrtr;
  table('4. MRTR', ['what', 'libmcp', 'TS v2 server'], [
    ['seal requestState', us(m.codec.seal_ns / 1000), '-'],
    ['open requestState', us(m.codec.open_ns / 1000), '-'],
    ['requestState size', `${m.codec.state_bytes} B`, '-'],
    ['plain call over HTTP, p50', us(m.libmcp.plain.p50_us), us(m.ts.plain.p50_us)],
    ['two-round call over HTTP, p50', us(m.libmcp.two_round.p50_us), us(m.ts.two_round.p50_us)],
    ['two-round / plain', ratio(m.libmcp.two_round.p50_us, m.libmcp.plain.p50_us),
     ratio(m.ts.two_round.p50_us, m.ts.plain.p50_us)]
  ]);

  const lg = (server, op) => results.large.find((r) => r.server === server && r.op === op);
  table('5. Large answers (wrk, 4 connections): requests/s, p50, p99',
        ['request', 'libmcp', 'p50', 'p99', 'TS v2', 'p50', 'p99', 'libmcp/TS'],
        [['tools/list, 1,000 tools', 'list'], ['resources/read, 1 MB', 'read']].map(([label, op]) => {
          const [a, b] = [lg('libmcp', op), lg('ts', op)];
          return [label, fmt(a.rps), us(a.p50_us), us(a.p99_us), fmt(b.rps), us(b.p50_us), us(b.p99_us),
                  ratio(a.rps, b.rps)];
        }));

  table('6. libmcp client connect + first call', ['era', 'transport', 'p50', 'p99', 'mean'],
        results.connect.map((r) => [r.era, r.transport, us(r.p50_us), us(r.p99_us), us(r.mean_us)]));

  table('Targets', ['target', 'value', 'met'],
        targets.map((t) => [t.what, t.value, t.met === null ? '' : t.met ? 'yes' : 'NO']));
  results.targets = targets;
}

// ---------------------------------------------------------------------------

// `run.mjs --report FILE` prints the tables of a saved run again.
if (process.argv[2] === '--report') {
  Object.assign(results, JSON.parse(readFileSync(process.argv[3], 'utf8')));
} else {
  for (const step of [httpEcho, headToHead, stdioPairs, memory, mrtr, large, connect]) await step();
  results.machine.load_after = os.loadavg().map((x) => +x.toFixed(2));
  results.finished = new Date().toISOString();
}
const mc = results.machine;
console.log(`\nlibmcp benchmarks, ${results.started}: ${mc.cpu}, ${mc.cpus} CPUs, ${mc.memory_gib} GiB, ` +
            `Linux ${mc.kernel}, Node ${mc.node}, ${mc.wrk}, libmicrohttpd ${mc.libmicrohttpd}, ` +
            `jansson ${mc.jansson}; load ${mc.load_before.join('/')} before, ${mc.load_after.join('/')} after`);
report();
if (process.argv[2] !== '--report') {
  const out = path.join(build, 'bench-results.json');
  writeFileSync(out, JSON.stringify(results, null, 2) + '\n');
  console.log(`\nresults: ${out}`);
}
