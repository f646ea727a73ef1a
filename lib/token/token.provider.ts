import {
  Inject,
  Injectable,
  Logger,
  Optional,
  type LoggerService,
  type OnApplicationBootstrap,
  type OnApplicationShutdown,
} from '@nestjs/common';
import { AssertionSigner } from './assertion.signer.js';
import type { Clock } from '../platform-auth.clock.js';
import {
  LOGGER_CONTEXT,
  PLATFORM_AUTH_CLOCK,
  PLATFORM_AUTH_CONFIG,
  PLATFORM_AUTH_INTEGRATION,
  PLATFORM_AUTH_LOGGER,
} from '../platform-auth.constants.js';
import { DEFAULT_INTEGRATION } from '../options/integration-name.util.js';
import type { ResolvedPlatformAuthConfig } from '../options/options.resolver.js';
import { TokenExchangeClient } from './token-exchange.client.js';
import { TokenExchangeAttempts } from './token-exchange.attempts.js';
import { MAX_RETRY_AFTER_BACKOFF_MS, TokenCache, renewalLeadMs, type ExchangeOutcome } from './token.cache.js';
import type { FleetMember, SharedTokenCoordinator } from '../store/shared-token.coordinator.js';
import { TokenStoreHost } from '../store/token-store.host.js';
import { MIN_EXCHANGE_INTERVAL_MS } from '../options/options.constants.js';
import { CredentialRotationError, TokenExchangeError } from '../platform-auth.errors.js';
import { CredentialsHolder, certificateNotAfterMs } from '../credentials/credentials.holder.js';
import { CredentialsWatch } from '../credentials/credentials.watch.js';
import { integrationHash } from '../telemetry/telemetry.events.js';
import { PlatformAuthTelemetry } from '../telemetry/telemetry.service.js';
import { CredentialsRotator, type RotateCredentialsInput } from './credentials.rotator.js';
import { TokenStatusTracker } from './token-status.tracker.js';
import type { SharedStoreStatus, TokenProviderStatus } from './token-status.types.js';

export interface AccessToken {
  readonly accessToken: string;
  /** Always `Bearer`. */
  readonly tokenType: string;
  /** When the platform said the token expires, by the local clock. */
  readonly expiresAt: Date;
}

/**
 * Holds the access token: exchanges an assertion for it, caches it, renews it ahead of expiry, and makes concurrent
 * callers share one exchange. One instance per module instance; nothing is shared across applications. The
 * lifecycle lives in `TokenCache`, the attempts of one exchange in `TokenExchangeAttempts`.
 */
@Injectable()
export class TokenProvider implements OnApplicationBootstrap, OnApplicationShutdown {
  private readonly client: TokenExchangeClient;
  private readonly startupCheck: ResolvedPlatformAuthConfig['startupCheck'];
  private readonly attempts: TokenExchangeAttempts;
  private readonly cache: TokenCache;
  private readonly tracker = new TokenStatusTracker();
  private readonly rotator: CredentialsRotator;
  private readonly holder: CredentialsHolder;
  private readonly shutdown = new AbortController();
  private sharedStoreStatus?: () => SharedStoreStatus;
  /** The fleet's shared token store, when one is configured; without it the cache asks the exchange directly. */
  private readonly shared?: SharedTokenCoordinator;

  constructor(
    @Inject(PLATFORM_AUTH_CONFIG) config: ResolvedPlatformAuthConfig,
    @Inject(PLATFORM_AUTH_CLOCK) private readonly clock: Clock,
    signer: AssertionSigner,
    @Optional() @Inject(PLATFORM_AUTH_LOGGER) private readonly logger: LoggerService = new Logger(LOGGER_CONTEXT),
    // Optional so that a provider wired by hand (the CLI, tests) works without the module's operations parts.
    @Optional() holder?: CredentialsHolder,
    @Optional() telemetry?: PlatformAuthTelemetry,
    @Optional() private readonly watch?: CredentialsWatch,
    @Optional() @Inject(PLATFORM_AUTH_INTEGRATION) private readonly integration: string = DEFAULT_INTEGRATION,
    @Optional() storeHost?: TokenStoreHost,
  ) {
    this.startupCheck = config.startupCheck;
    this.holder = holder ?? new CredentialsHolder(config.machineId, config.credentials, clock.now());
    const observed =
      telemetry ?? PlatformAuthTelemetry.channelOnly(integrationHash(config.tokenUrl, config.machineId), clock);
    this.client = new TokenExchangeClient(config, () => clock.now());
    this.attempts = new TokenExchangeAttempts(config, clock, signer, this.client, this.logger);
    this.rotator = new CredentialsRotator(config, clock, this.holder, this.client, observed, this.logger);
    this.shared = storeHost?.coordinator;
    const fleetMember: FleetMember = {
      exchange: (signal) => observed.recordExchange(() => this.attempts.run(signal)),
      // The earliest any replica renews (jitter only delays it): a token past that is due, not shared.
      isUsable: (token) => clock.now() < token.expiresAtMs - renewalLeadMs(token, config.refreshBeforeExpirySeconds),
      retryAtAfter: (failure) =>
        clock.now() +
        Math.max(config.failureBackoffMs, Math.min(MAX_RETRY_AFTER_BACKOFF_MS, failure.retryAfterMs ?? 0)),
    };
    // A token belongs to the integration it was issued to: after a cut-over to another machineId it is not used.
    let machineId = this.holder.active.machineId;
    this.holder.onSwap((active) => {
      const current = this.cache.current;
      if (active.machineId !== machineId && current) this.cache.invalidate(current.accessToken);
      machineId = active.machineId;
    });
    if (this.shared) {
      const shared = this.shared;
      this.sharedStoreStatus = () => shared.status();
    }
    this.cache = new TokenCache({
      clock,
      minExchangeIntervalMs: MIN_EXCHANGE_INTERVAL_MS,
      refreshBeforeExpirySeconds: config.refreshBeforeExpirySeconds,
      failureBackoffMs: config.failureBackoffMs,
      exchange: (signal): Promise<ExchangeOutcome> =>
        this.shared ? this.shared.obtain(fleetMember, signal) : fleetMember.exchange(signal),
      listener: {
        exchanged: (report) => this.tracker.record(report),
        renewalFailed: (error) => {
          this.logger.warn(
            `Background token renewal failed; the current token is served until it expires. ${error.message}`,
          );
        },
      },
    });
    observed.observe({
      tokenExpiresAtMs: () => this.cache.current?.expiresAtMs,
      certificateNotAfterMs: () => certificateNotAfterMs(this.holder.active.credentials),
    });
  }

  /**
   * The cached token when one is usable right now, else `undefined` (then call `getAccessToken()`). Synchronous, for
   * hot paths such as the interceptor; it starts a background renewal when the token is due, like `getAccessToken()`.
   */
  peekAccessToken(): string | undefined {
    return this.cache.peek()?.accessToken;
  }

  /** A valid access token, from the cache when possible. */
  getAccessToken(): Promise<string> {
    const cached = this.cache.peek();
    if (cached) return Promise.resolve(cached.accessToken);
    return this.cache.get().then((token) => token.accessToken);
  }

  /** The access token with its type and expiry. */
  async getToken(): Promise<AccessToken> {
    const token = await this.cache.get();
    return { accessToken: token.accessToken, tokenType: token.tokenType, expiresAt: token.expiresAt };
  }

  /**
   * Drops `token` if it is still the cached one (say, after the platform answered 401 to it). A token that was
   * already replaced is left alone, so a late 401 never throws away a fresh token.
   */
  invalidate(token: string): boolean {
    // The shared copy too, if it is still the stored one: the platform has refused it for every replica.
    this.shared?.invalidate(token);
    return this.cache.invalidate(token);
  }

  /** Platform clock minus local clock, from the last token response's `Date` header. */
  get clockOffsetMs(): number | undefined {
    return this.attempts.clockOffsetMs;
  }

  /** Exchanges this instance performed (attempts within one exchange count once; tokens from the store do not count). */
  get exchanges(): number {
    return this.attempts.exchanges;
  }

  /**
   * With `startupCheck`, the first token is acquired while the application boots, so a wrong machineId or an
   * unreachable platform shows at deploy time: `'fail'` rejects `app.init()`/`listen()` with the
   * `TokenExchangeError`, `'warn'` logs it and lets the application start.
   */
  async onApplicationBootstrap(): Promise<void> {
    if (this.startupCheck === 'off') return;
    try {
      await this.getAccessToken();
    } catch (error) {
      if (this.startupCheck === 'fail' || !(error instanceof TokenExchangeError)) throw error;
      this.logger.warn(`Start-up check: no token could be acquired; the application starts anyway. ${error.message}`);
    }
  }

  /**
   * A snapshot of token acquisition, safe to log and serve: state, token timing, the last exchange, back-off, the
   * certificate's expiry and the credentials in use. Never the token, a key or the machineId. Starts nothing.
   */
  status(): TokenProviderStatus {
    return this.tracker.snapshot({
      integration: this.integration,
      now: this.clock.now(),
      state: this.cache.state,
      token: this.cache.current,
      holder: this.holder,
      reload: this.watch?.reloadStatus() ?? { state: 'off' },
      sharedStore: this.sharedStoreStatus?.(),
    });
  }

  /**
   * Switches to a new key and certificate (and machineId) without a restart: every start-up check, then one
   * exchange signed with the new pair, then the swap. Rejects with `CredentialRotationError` and changes nothing
   * when either fails. The cached token is used until it expires.
   */
  rotateCredentials(input: RotateCredentialsInput): Promise<void> {
    const machineId = (input as Partial<RotateCredentialsInput> | undefined)?.machineId;
    if (this.shared && machineId !== undefined && machineId !== this.holder.active.machineId) {
      // The fleet shares tokens by integration: one replica moving to another integration would hand its tokens to
      // replicas still on the old one. Such a cut-over is a named integration beside this one, or a redeploy.
      const message = 'changes the integration while a shared token store is configured; not supported';
      return Promise.reject(
        new CredentialRotationError(`credential rotation refused: machineId ${message}`, 'validation', [
          { option: 'machineId', setting: 'machineId', message },
        ]),
      );
    }
    return this.rotator.rotate(input, this.shutdown.signal);
  }

  /** For the shared token store: where `status().sharedStore` is read from. */
  reportSharedStoreStatus(read: () => SharedStoreStatus): void {
    this.sharedStoreStatus = read;
  }

  /**
   * Torn down at application shutdown, after Nest has drained the HTTP server (not at module destroy, which comes
   * before the drain): requests still in flight then finish their platform calls, token exchange included.
   */
  onApplicationShutdown(): void {
    this.shutdown.abort(
      new TokenExchangeError('token provider is shut down', {
        reason: 'aborted',
        attempts: 0,
        retried: false,
        hint: 'The application shut down; no new tokens are fetched and credentials are not rotated.',
      }),
    );
    this.cache.close();
    this.client.destroy();
  }
}
