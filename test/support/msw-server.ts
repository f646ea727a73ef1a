import { setupServer, type SetupServer } from 'msw/node';
import { afterAll, afterEach, beforeAll } from 'vitest';

export { MSW_BASE_URL } from './platform-fixture.js';

/**
 * For a describe block: an MSW server that intercepts while the block's tests run, with no handlers of its own;
 * each test adds the emulator's (`server.use`), removed after it. A request no handler answers goes on to the
 * network (the loopback servers some tests start), so the block tests what reaches the platform, not MSW's own
 * refusals.
 */
export function useMswServer(): SetupServer {
  const server = setupServer();
  beforeAll(() => server.listen({ onUnhandledRequest: 'bypass' }));
  afterEach(() => server.resetHandlers());
  afterAll(() => server.close());
  return server;
}
