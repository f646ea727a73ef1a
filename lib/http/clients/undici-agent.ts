import { createRequire } from 'node:module';
import type { BearerPolicy } from '../engine/bearer.policy.js';
import type { Handler, LegacyHandler } from './undici-handlers.js';
import {
  bearerDispatch,
  type AnyDispatch,
  type DispatchOptions,
  type PlatformDispatcher,
} from './undici.interceptor.js';

interface AgentLike {
  dispatch(options: DispatchOptions, handler: Handler | LegacyHandler): boolean;
}

type PlatformAgentClass = new (policy: BearerPolicy) => AgentLike;

/** Made once undici is loaded: every integration's and tenant's dispatcher is one of these. */
let platformAgentClass: PlatformAgentClass | undefined;

/**
 * An undici `Agent` that applies the bearer rules in its own `dispatch`: the rules `PlatformFetch.interceptor` brings
 * to `compose`, without what `compose` adds to every request (each handler converted to undici's newer kind and
 * back, the response's raw headers parsed into an object and encoded again). Needs the optional peer undici 7.
 */
export function newPlatformAgent(policy: BearerPolicy): PlatformDispatcher {
  platformAgentClass ??= extendAgent(loadUndici().Agent);
  return new platformAgentClass(policy) as unknown as PlatformDispatcher;
}

function extendAgent(Agent: new () => AgentLike): PlatformAgentClass {
  return class PlatformAgent extends Agent {
    readonly #dispatch: AnyDispatch;

    constructor(policy: BearerPolicy) {
      super();
      this.#dispatch = bearerDispatch(policy, (options, handler) => super.dispatch(options, handler));
    }

    override dispatch(options: DispatchOptions, handler: Handler | LegacyHandler): boolean {
      return this.#dispatch(options, handler);
    }
  };
}

/** undici, loaded when first asked for: an optional peer that most apps never load. undici is CommonJS. */
function loadUndici(): { Agent: new () => AgentLike } {
  try {
    return createRequire(import.meta.url)('undici') as { Agent: new () => AgentLike };
  } catch (cause) {
    throw new Error('PlatformFetch.dispatcher needs the optional peer undici 7: npm install undici@7', { cause });
  }
}
