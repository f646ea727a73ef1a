import { Agent as HttpAgent } from 'node:http';
import { Agent as HttpsAgent } from 'node:https';
import { inspect } from 'node:util';

/*
 * axios puts the agents into every request config, and `AxiosError.toJSON()` and `util.inspect` walk the config:
 * through an agent's sockets they reach the raw request head of whatever request is on the wire at that moment,
 * bearer token included. These agents render as a placeholder instead.
 */

export class OpaqueHttpAgent extends HttpAgent {
  toJSON(): string {
    return '[http.Agent]';
  }

  [inspect.custom](): string {
    return '[http.Agent]';
  }
}

export class OpaqueHttpsAgent extends HttpsAgent {
  toJSON(): string {
    return '[https.Agent]';
  }

  [inspect.custom](): string {
    return '[https.Agent]';
  }
}

/** A keep-alive agent pair that never renders its sockets. */
export function createOpaqueAgents(): { httpAgent: OpaqueHttpAgent; httpsAgent: OpaqueHttpsAgent } {
  return { httpAgent: new OpaqueHttpAgent({ keepAlive: true }), httpsAgent: new OpaqueHttpsAgent({ keepAlive: true }) };
}
