import { Injectable } from '@nestjs/common';
import { DiscoveryService } from '@nestjs/core';
import { PlatformTenants, getPlatformFetchToken, type PlatformFetch } from '../index.js';
import { PlatformOutboxError } from './outbox.errors.js';
import type { StoredMessage } from './outbox.types.js';
import type { Sender } from './outbox.worker.js';

/**
 * The clients messages are sent with, found among the application's providers once it is up (Nest's
 * `DiscoveryService`, as `@nestjs/bullmq` finds its processors): each integration's `PlatformFetch` under the token
 * `getPlatformFetchToken(name)` gives it, and the tenant registry of `PlatformAuthModule.forTenants`. Integrations' modules can be imported anywhere in the application.
 */
@Injectable()
export class OutboxSenders {
  #providers?: ReadonlyMap<unknown, unknown>;

  constructor(private readonly discovery: DiscoveryService) {}

  private provided<T>(token: unknown): T | undefined {
    this.#providers ??= new Map(this.discovery.getProviders().map((wrapper) => [wrapper.token, wrapper.instance]));
    return this.#providers.get(token) as T | undefined;
  }

  async senderOf({ integration, tenant }: Pick<StoredMessage, 'integration' | 'tenant'>): Promise<Sender> {
    if (tenant !== undefined) {
      const tenants = this.provided<PlatformTenants>(PlatformTenants);
      if (!tenants) {
        throw new PlatformOutboxError('not_found', 'no tenant registry in this application (PlatformAuthModule.forTenants)');
      }
      return { fetch: (await tenants.get(tenant)).fetch.fetch };
    }
    let client: PlatformFetch | undefined;
    try {
      client = this.provided<PlatformFetch>(getPlatformFetchToken(integration));
    } catch {
      // A name no integration can have: no such integration either.
    }
    if (!client) {
      const which = integration === undefined ? 'the default integration' : `the integration '${integration}'`;
      throw new PlatformOutboxError('not_found', `${which} is not registered in this application (PlatformAuthModule)`);
    }
    return { fetch: client.fetch };
  }
}
