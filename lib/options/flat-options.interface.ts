import type { CallRetryOptions } from './call-options.interface.js';
import type { RetryOptions } from './exchange-options.interface.js';
import type { PlatformAuthOptions } from './platform-auth-options.interface.js';
import type { RedisTokenStoreClient, TokenStore } from './token-store.interface.js';

/**
 * The options as every layer's resolver reads them: one field per setting, under the flat names of earlier releases,
 * whichever shape the caller used (`flattenOptions` maps `key`, `next`, `exchange` and `tokenStore` onto them).
 * Internal: the public shape is `PlatformAuthOptions`.
 */
export interface FlatPlatformAuthOptions extends Omit<
  PlatformAuthOptions,
  'key' | 'next' | 'exchange' | 'tokenStore' | 'retry'
> {
  /** `exchange.retry`, under its name of earlier releases. */
  retry?: RetryOptions;
  /** The top-level `retry`: the policy of calls to the platform's APIs. */
  callRetry?: CallRetryOptions | boolean;
  /** `next.passphrase`; without it the next pair's encrypted key uses `privateKeyPassphrase`. */
  nextPrivateKeyPassphrase?: string;
  /** `tokenStore.instance`, or a `TokenStore` given as `tokenStore`. */
  tokenStore?: TokenStore;
  /** `tokenStore.client`. */
  tokenStoreClient?: RedisTokenStoreClient;
}
