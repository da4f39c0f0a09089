// The TypeScript SDK v2 client side of the stdio benchmarks: starts a
// server (any command) over stdio with @modelcontextprotocol/client 2.4.0,
// pinned to 2026-07-28, and times tools/call echo round trips, like
// bench/bench_client.c does for libmcp.
//
//   node ts_client.mjs [--calls N] [--warmup N] [--inflight K] -- COMMAND [ARGS...]
//
// Output: one JSON line {"calls","seconds","calls_per_s","p50_us","p99_us","client_rss_kb"}.
import { Client } from '@modelcontextprotocol/client';
import { StdioClientTransport } from '@modelcontextprotocol/client/stdio';

const argv = process.argv.slice(2);
let calls = 10000, warmup = -1, inflight = 1;
const dash = argv.indexOf('--');
for (let i = 0; i < (dash < 0 ? argv.length : dash); i += 2) {
  const v = Number(argv[i + 1]);
  if (argv[i] === '--calls') calls = v;
  else if (argv[i] === '--warmup') warmup = v;
  else if (argv[i] === '--inflight') inflight = v;
}
if (dash < 0 || dash + 1 >= argv.length || !(calls > 0) || !(inflight > 0)) {
  console.error('usage: node ts_client.mjs [--calls N] [--warmup N] [--inflight K] -- COMMAND [ARGS...]');
  process.exit(2);
}
if (warmup < 0) warmup = Math.min(1000, Math.floor(calls / 10));
const [command, ...args] = argv.slice(dash + 1);

const client = new Client({ name: 'ts2-bench', version: '2.4.0' },
                          { versionNegotiation: { mode: { pin: '2026-07-28' } } });
await client.connect(new StdioClientTransport({ command, args, stderr: 'inherit' }));

// `count` calls from `inflight` concurrent loops; latencies in µs.
async function batch(count, lat) {
  let next = 0;
  const loop = async () => {
    for (let i = next++; i < count; i = next++) {
      const t0 = process.hrtime.bigint();
      const r = await client.callTool({ name: 'echo', arguments: { text: 'hello' } });
      lat[i] = Number(process.hrtime.bigint() - t0) / 1000;
      if (r.isError || r.content?.[0]?.text !== 'hello') throw new Error('wrong echo result');
    }
  };
  await Promise.all(Array.from({ length: inflight }, loop));
}

await batch(warmup, new Array(warmup));
const lat = new Float64Array(calls);
const t0 = process.hrtime.bigint();
await batch(calls, lat);
const seconds = Number(process.hrtime.bigint() - t0) / 1e9;
lat.sort();
const pct = (p) => lat[Math.min(calls, Math.max(1, Math.ceil(p / 100 * calls))) - 1];
const rssKb = Math.round(process.memoryUsage().rss / 1024);
console.log(JSON.stringify({ calls, seconds: +seconds.toFixed(4), calls_per_s: +(calls / seconds).toFixed(1),
                             p50_us: +pct(50).toFixed(1), p99_us: +pct(99).toFixed(1), client_rss_kb: rssKb }));
await client.close();
