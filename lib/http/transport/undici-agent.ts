import { createRequire } from 'node:module';
import type { BearerPolicy } from './bearer.policy.js';
import type { Handler, LegacyHandler } from './undici-handlers.js';
import { bearerDispatch, type DispatchOptions, type PlatformDispatcher } from './undici.interceptor.js';

interface AgentLike {
  dispatch(options: DispatchOptions, handler: Handler | LegacyHandler): boolean;
}

/**
 * An undici `Agent` that applies the bearer rules in its own `dispatch`: the rules `PlatformFetch.interceptor` brings
 * to `compose`, without what `compose` adds to every request (each handler converted to undici's newer kind and
 * back, the response's raw headers parsed into an object and encoded again). Needs the optional peer undici 7.
 */
export function newPlatformAgent(policy: BearerPolicy): PlatformDispatcher {
  const { Agent } = loadUndici();
  class PlatformAgent extends Agent {
    readonly #dispatch = bearerDispatch(policy, (options, handler) => super.dispatch(options, handler));

    override dispatch(options: DispatchOptions, handler: Handler | LegacyHandler): boolean {
      return this.#dispatch(options, handler);
    }
  }
  return new PlatformAgent() as unknown as PlatformDispatcher;
}

/** undici, loaded when first asked for: an optional peer that most apps never load. undici is CommonJS. */
function loadUndici(): { Agent: new () => AgentLike } {
  try {
    return createRequire(import.meta.url)('undici') as { Agent: new () => AgentLike };
  } catch (cause) {
    throw new Error('PlatformFetch.dispatcher needs the optional peer undici 7: npm install undici@7', { cause });
  }
}
