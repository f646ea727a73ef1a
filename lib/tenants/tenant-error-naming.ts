import { PlatformAuthError } from '../platform-auth.errors.js';
import { TokenProvider } from '../token/token.provider.js';
import { describeTenant } from '../util/remote-text.util.js';

/**
 * Makes an error of a tenant's integration (a failed exchange and its back-off, a refused rotation, a rate-limit
 * wait, a signing failure) say which tenant it is about, as the registry's own errors do: a `tenantId` field (in
 * `JSON.stringify` too) and a message, and the first line of the stack, that start with `Tenant '<id>': `, the id
 * escaped and bounded. An error is named once: every caller that waited for the same exchange shares it, and each
 * tenant's errors come from its own integration. Anything else passes as it is.
 */
export function nameTenantError(error: unknown, tenantId: string): unknown {
  if (!(error instanceof PlatformAuthError) || Object.hasOwn(error, 'tenantId')) return error;
  const before = error.message;
  const named = `Tenant ${describeTenant(tenantId)}: ${before}`;
  Object.defineProperty(error, 'tenantId', { value: tenantId, enumerable: true });
  error.message = named;
  const { stack } = error;
  const head = `${error.name}: ${before}`;
  if (typeof stack === 'string' && stack.startsWith(head))
    error.stack = `${error.name}: ${named}${stack.slice(head.length)}`;
  return error;
}

/**
 * The tenant's `TokenProvider` (`tenant.tokens`, also what its `http` and `fetch` ask for tokens) rejects only with
 * errors that name the tenant. Its own methods are shadowed on the instance, calling the class's: nothing is
 * allocated per call but the one `catch`, and only the methods that can reject are wrapped.
 */
export function nameTokenProviderErrors(tokens: TokenProvider, tenantId: string): void {
  const named = (error: unknown): never => {
    throw nameTenantError(error, tenantId);
  };
  const methods = TokenProvider.prototype;
  tokens.getAccessToken = () => methods.getAccessToken.call(tokens).catch(named);
  tokens.getToken = () => methods.getToken.call(tokens).catch(named);
  tokens.rotateCredentials = (input) => methods.rotateCredentials.call(tokens, input).catch(named);
}
