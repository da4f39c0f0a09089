// Starting a libmcp program that serves Streamable HTTP (`--http`), for the
// interop scripts: such a program picks a free port and names its URL on
// stderr.
import { spawn } from 'node:child_process';

// Spawns `path args`, passing its stderr through. Returns the process, a
// promise of its exit ({ code, signal }), and a promise of the URL it
// names, rejected when it exits first.
export function spawnHttpServer(path, args) {
  const server = spawn(path, args, { stdio: ['ignore', 'inherit', 'pipe'] });
  const exit = new Promise((resolve) =>
    server.once('exit', (code, signal) => resolve({ code, signal })));
  const name = path.split('/').pop();
  const url = new Promise((resolve, reject) => {
    let buffered = '';
    server.stderr.on('data', (chunk) => {
      process.stderr.write(chunk);
      buffered += chunk;
      const found = buffered.match(/http:\/\/127\.0\.0\.1:\d+\/mcp/);
      if (found) resolve(found[0]);
    });
    exit.then(({ code, signal }) =>
      reject(new Error(`${name} exited before printing its URL (${code ?? signal})`)));
  });
  // The caller awaits `url` when it needs it; until then an early exit must
  // not count as an unhandled rejection.
  url.catch(() => {});
  return { server, exit, url };
}
