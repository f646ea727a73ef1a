import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { mkdtempSync, rmSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

/** A throwaway redis-server (the Debian package, as `npm test` ensures) on a free loopback port, persistence off. */
export async function startRedis(): Promise<{ url: string; pid: number; stop(): Promise<void> }> {
  const probe = createServer().listen(0, '127.0.0.1');
  await once(probe, 'listening');
  const { port } = probe.address() as { port: number };
  await new Promise((resolve) => probe.close(resolve));
  const dir = mkdtempSync(join(tmpdir(), 'platform-auth-bench-redis-'));
  const server = spawn(
    '/usr/bin/redis-server',
    ['--port', String(port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no', '--dir', dir],
    {
      stdio: ['ignore', 'pipe', 'inherit'],
    },
  );
  await new Promise<void>((resolve, reject) => {
    let output = '';
    server.once('exit', (code) => reject(new Error(`redis-server exited (${code}):\n${output}`)));
    // Reads on after the ready line too, so the server never blocks on a full pipe.
    server.stdout.on('data', (chunk: Buffer) => {
      output += String(chunk);
      if (output.includes('Ready to accept connections')) resolve();
    });
  });
  return {
    url: `redis://127.0.0.1:${port}`,
    pid: server.pid!,
    async stop() {
      server.kill('SIGKILL');
      await once(server, 'exit');
      rmSync(dir, { recursive: true, force: true });
    },
  };
}
