import { createServer, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { isUserAuthError, type UserAuthError } from 'nestjs-platform-auth/user';
import { eventually } from '../support/eventually.js';
import { startUserFixture, type UserFixture } from './user-test-kit.js';

/** 64 KiB: what the machine exchange accepts, and what user sign-in's token requests accept. */
const LIMIT = 64 * 1024;

interface HugeServer {
  url: string;
  /** Bytes of body written to each response before the client went away or the body ended. */
  written: number[];
  close(): Promise<void>;
}

/** A token endpoint whose every answer is a valid token response padded to `bytes`, sent in 64 KiB chunks. */
async function startHugeServer(bytes: number, declareLength: boolean): Promise<HugeServer> {
  const written: number[] = [];
  const server: Server = createServer((req, res) => {
    req.resume();
    req.on('end', () => stream(res, bytes, declareLength, written));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    written,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

function stream(res: ServerResponse, bytes: number, declareLength: boolean, written: number[]): void {
  const head = '{"access_token":"huge-token-value","token_type":"Bearer","expires_in":600,"padding":"';
  const tail = '"}';
  const index = written.push(0) - 1;
  res.writeHead(200, {
    'content-type': 'application/json',
    ...(declareLength ? { 'content-length': String(bytes) } : {}),
  });
  res.write(head);
  written[index] = head.length;
  const chunk = 'x'.repeat(64 * 1024);
  const pump = (): void => {
    while (written[index] + chunk.length + tail.length < bytes) {
      if (res.destroyed) return;
      written[index] += chunk.length;
      if (!res.write(chunk)) {
        res.once('drain', pump);
        return;
      }
    }
    res.end('x'.repeat(bytes - written[index] - tail.length) + tail);
    written[index] = bytes;
  };
  res.on('close', () => undefined);
  pump();
}

let server: HugeServer | undefined;
let fx: UserFixture | undefined;
afterEach(async () => {
  await fx?.close();
  await server?.close();
  fx = server = undefined;
});

async function refreshAgainst(bytes: number, declareLength: boolean): Promise<UserAuthError> {
  server = await startHugeServer(bytes, declareLength);
  fx = await startUserFixture({ baseUrl: server.url, tokenPath: '/token' });
  const error = await fx.auth.refresh('some-refresh-token').then(
    () => expect.fail('a huge answer was accepted'),
    (e: unknown) => e,
  );
  expect(isUserAuthError(error), String(error)).toBe(true);
  return error as UserAuthError;
}

describe('token endpoint answers are bounded like the machine exchange (64 KiB)', () => {
  it('an answer just under the limit is accepted', async () => {
    server = await startHugeServer(LIMIT - 1024, true);
    fx = await startUserFixture({ baseUrl: server.url, tokenPath: '/token' });
    await expect(fx.auth.refresh('some-refresh-token')).resolves.toMatchObject({ accessToken: 'huge-token-value' });
  });

  it('a 300 MB answer announced by Content-Length is refused without reading it', async () => {
    const error = await refreshAgainst(300 * 1024 * 1024, true);
    expect(error.reason).toBe('invalid_response');
    expect(error.message).toMatch(/larger than 64 KiB/);
    await eventually(() => expect(server!.written[0]).toBeLessThan(32 * 1024 * 1024));
  });

  it('a 300 MB answer without Content-Length is cut off once it passes the limit', async () => {
    const error = await refreshAgainst(300 * 1024 * 1024, false);
    expect(error.reason).toBe('invalid_response');
    expect(error.message).toMatch(/larger than 64 KiB/);
    // The server got no further than its socket buffers allowed: the client stopped reading.
    await eventually(() => expect(server!.written[0]).toBeLessThan(32 * 1024 * 1024));
  });
});
