import { Injectable } from '@nestjs/common';
import { DiscoveryService } from '@nestjs/core';
import {
  PlatformTenants,
  getPlatformFetchToken,
  getTokenProviderToken,
  type PlatformFetch,
  type TokenProvider,
} from '../index.js';
import { PlatformOutboxError } from './outbox.errors.js';
import type { StoredMessage } from './outbox.types.js';
import type { Sender } from './outbox.worker.js';

/**
 * The clients messages are sent with, found among the application's providers once it is up (Nest's
 * `DiscoveryService`, as `@nestjs/bullmq` finds its processors): each integration's `PlatformFetch` under the token
 * `getPlatformFetchToken(name)` gives it, the integration's `TokenProvider` for its rate limit, and the tenant
 * registry of `PlatformAuthModule.forTenants`. Integrations' modules can be imported anywhere in the application.
 */
@Injectable()
export class OutboxSenders {
  #providers?: ReadonlyMap<unknown, unknown>;
  readonly #rates = new WeakMap<PlatformFetch, number | undefined>();

  constructor(private readonly discovery: DiscoveryService) {}

  private provided<T>(token: unknown): T | undefined {
    this.#providers ??= new Map(this.discovery.getProviders().map((wrapper) => [wrapper.token, wrapper.instance]));
    return this.#providers.get(token) as T | undefined;
  }

  async senderOf({ integration, tenant }: Pick<StoredMessage, 'integration' | 'tenant'>): Promise<Sender> {
    if (tenant !== undefined) {
      const tenants = this.provided<PlatformTenants>(PlatformTenants);
      if (!tenants) {
        throw new PlatformOutboxError(
          'not_found',
          'no tenant registry in this application (PlatformAuthModule.forTenants)',
        );
      }
      const found = await tenants.get(tenant);
      return this.sender(found.fetch, found.tokens);
    }
    let client: PlatformFetch | undefined;
    let tokens: TokenProvider | undefined;
    try {
      client = this.provided<PlatformFetch>(getPlatformFetchToken(integration));
      tokens = this.provided<TokenProvider>(getTokenProviderToken(integration));
    } catch {
      // A name no integration can have: no such integration either.
    }
    if (!client || !tokens) {
      const which = integration === undefined ? 'the default integration' : `the integration '${integration}'`;
      throw new PlatformOutboxError('not_found', `${which} is not registered in this application (PlatformAuthModule)`);
    }
    return this.sender(client, tokens);
  }

  /** The client's `fetch`, and its rate limit, read once per client (a tenant built again is a new client). */
  private sender(client: PlatformFetch, tokens: TokenProvider): Sender {
    if (!this.#rates.has(client)) this.#rates.set(client, tokens.status().rateLimit?.requestsPerSecond);
    const perSecond = this.#rates.get(client);
    return { fetch: client.fetch, ...(perSecond !== undefined && { perSecond }) };
  }
}
