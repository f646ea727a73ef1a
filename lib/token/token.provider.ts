import type { KeySource } from '../options/key-source.interface.js';
import type { TokenCache } from './token.cache.js';
import type { TokenProviderStatus } from './token-status.types.js';

/** What `TokenProvider.getToken()` gives: the access token with its type and expiry. */
export interface AccessToken {
  readonly accessToken: string;
  /** Always `Bearer`. */
  readonly tokenType: string;
  /** When the platform said the token expires, by the local clock. */
  readonly expiresAt: Date;
}

/** What the façade hands its calls to; the composition root builds it (see `platform-auth.wiring.ts`). */
interface TokenProviderCore {
  readonly cache: TokenCache;
  clockOffsetMs(): number | undefined;
  status(): TokenProviderStatus;
  rotateCredentials(input: Parameters<TokenProvider['rotateCredentials']>[0]): Promise<void>;
}

/**
 * The access token of one integration: cached, renewed ahead of expiry, one exchange for any number of concurrent
 * callers. Inject it (`TokenProvider`, or `@InjectTokenProvider(name)` for a named integration); the module builds
 * it (its constructor is internal). In tests, replace it with `overrideProvider(TokenProvider).useValue(…)`.
 */
export class TokenProvider {
  // A true private field: nothing of the cache shows when someone logs or inspects the provider.
  readonly #core: TokenProviderCore;

  /** @internal Only the composition root builds it; apps get it from the container. */
  static create(core: TokenProviderCore): TokenProvider {
    return new TokenProvider(core);
  }

  // Private, so that the declarations (which leave out what is internal) offer no constructor to call.
  private constructor(core: TokenProviderCore) {
    this.#core = core;
  }

  /**
   * The cached token when one is usable right now, else `undefined` (then call `getAccessToken()`). Synchronous, for
   * hot paths such as the interceptor; it starts a background renewal when the token is due, like `getAccessToken()`.
   */
  peekAccessToken(): string | undefined {
    return this.#core.cache.peek()?.accessToken;
  }

  /** A valid access token, from the cache when possible. */
  getAccessToken(): Promise<string> {
    const cached = this.#core.cache.peek();
    if (cached) return Promise.resolve(cached.accessToken);
    return this.#core.cache.get().then((token) => token.accessToken);
  }

  /** The access token with its type and expiry. */
  async getToken(): Promise<AccessToken> {
    const token = await this.#core.cache.get();
    return { accessToken: token.accessToken, tokenType: token.tokenType, expiresAt: token.expiresAt };
  }

  /**
   * Tells the provider the platform refused `token` (a 401). The first time for a token it handed out, it drops the
   * cached token even if it has replaced `token` since (a platform clock that jumped ahead refuses every token issued
   * before), and the shared store's copy of `token`; the next token comes from an exchange started after this call,
   * or from a replica that obtained it after a refusal of `token`. Calls refused with the same token share that one
   * renewal: a second call for it changes nothing. Returns whether the cached token was dropped.
   */
  invalidate(token: string): boolean {
    return this.#core.cache.invalidate(token);
  }

  /** Platform clock minus local clock, from the last token response's `Date` header. */
  get clockOffsetMs(): number | undefined {
    return this.#core.clockOffsetMs();
  }

  /**
   * A snapshot of token acquisition, safe to log and serve: state, token timing, the last exchange, back-off, the
   * certificate's expiry and the credentials in use. Never the token, a key or the machineId. Starts nothing.
   */
  status(): TokenProviderStatus {
    return this.#core.status();
  }

  /**
   * Switches to a new key and certificate (and machineId) without a restart. The pair is a key source, as the `key`
   * option takes it (PEM text or files, a `pkcs11:` URI or a signer, and the certificate): every start-up check, then
   * one exchange signed with the new pair, then the swap. Rejects with `CredentialRotationError` and changes nothing
   * when either fails. The cached token is used until it expires.
   */
  rotateCredentials(input: {
    /**
     * The new key and its certificate, as the `key` option takes them: PEM text (from a secrets manager, say) or
     * files, a `pkcs11:` URI or a signer, with `passphrase` for an encrypted PEM key.
     */
    readonly key: KeySource;
    /** For a cut-over to another system integration; default: the machineId in use. */
    readonly machineId?: string;
  }): Promise<void> {
    return this.#core.rotateCredentials(input);
  }
}
