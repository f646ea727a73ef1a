import type { TokenSource } from '../token/token.cache.js';
import type { SharedTokenCoordinator } from './shared-token.coordinator.js';

/**
 * `inner` with the fleet around it: a token another replica shared is used instead of exchanging, one replica
 * exchanges for all, and a 401 removes the shared copy too. Applied by the composition root; the token core knows
 * nothing of it.
 */
export function sharedTokenSource(inner: TokenSource, coordinator: SharedTokenCoordinator): TokenSource {
  return {
    exchange: (signal, policy) => coordinator.obtain(inner, policy, signal),
    refused: (accessToken) => {
      coordinator.invalidate(accessToken);
      inner.refused?.(accessToken);
    },
  };
}
