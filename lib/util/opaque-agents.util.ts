import { Agent as HttpAgent } from 'node:http';
import { Agent as HttpsAgent } from 'node:https';
import { inspect } from 'node:util';

/*
 * axios puts the agents into every request config, and `AxiosError.toJSON()` and `util.inspect` walk the config:
 * through an agent's sockets they reach the raw request head of whatever request is on the wire at that moment,
 * bearer token included. These agents render as a placeholder instead.
 */

class OpaqueHttpAgent extends HttpAgent {
  toJSON(): string {
    return '[http.Agent]';
  }

  [inspect.custom](): string {
    return '[http.Agent]';
  }
}

class OpaqueHttpsAgent extends HttpsAgent {
  toJSON(): string {
    return '[https.Agent]';
  }

  [inspect.custom](): string {
    return '[https.Agent]';
  }
}

/*
 * How long an idle keep-alive socket is kept. Node applies a server's `Keep-Alive: timeout=N` hint (less a second)
 * only when the agent has a timeout of its own; without one, idle sockets are kept forever, and one reused just as
 * the server closes it fails the request with ECONNRESET. Node's own servers close idle sockets after 5 s.
 */
const IDLE_SOCKET_TIMEOUT_MS = 4_000;

/** A keep-alive agent pair that never renders its sockets. */
export function createOpaqueAgents(): { httpAgent: OpaqueHttpAgent; httpsAgent: OpaqueHttpsAgent } {
  const options = { keepAlive: true, timeout: IDLE_SOCKET_TIMEOUT_MS };
  return { httpAgent: new OpaqueHttpAgent(options), httpsAgent: new OpaqueHttpsAgent(options) };
}
