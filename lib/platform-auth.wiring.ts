import type { LoggerService } from '@nestjs/common';
import type { Clock } from './platform-auth.clock.js';
import { TokenExchangeError, shutdownError } from './platform-auth.errors.js';
import type { ResolvedPlatformAuthConfig } from './platform-auth.configuration.js';
import { MIN_EXCHANGE_INTERVAL_MS } from './options/options.constants.js';
import { CredentialsHolder, certificateNotAfterMs } from './credentials/credentials.holder.js';
import { CredentialsWatch } from './credentials/credentials.watch.js';
import { AssertionSigner } from './token/assertion.signer.js';
import { CredentialsRotator } from './token/credentials.rotator.js';
import { NextPairSwitch } from './token/next-pair.switch.js';
import { TokenExchangeAttempts } from './token/token-exchange.attempts.js';
import { TokenExchangeClient } from './token/token-exchange.client.js';
import { TokenCache, type TokenSource } from './token/token.cache.js';
import { TokenProvider } from './token/token.provider.js';
import { TokenStatusTracker } from './token/token-status.tracker.js';
import { observedTokenSource, type PlatformAuthTelemetry } from './telemetry/telemetry.service.js';
import { TokenStoreHost } from './store/token-store.host.js';
import { PlatformAuthInterceptor } from './http/platform-auth.interceptor.js';
import { createPlatformHttpClient, type PlatformHttpService } from './http/platform-http.service.js';
import { BearerPolicy } from './http/transport/bearer.policy.js';
import { PlatformFetch } from './http/transport/platform-fetch.js';
import { startupLine } from './platform-auth.startup-line.js';

export interface PlatformAuthWiringInput {
  readonly config: ResolvedPlatformAuthConfig;
  /** `default`, or the name given to `forRoot`. */
  readonly integration: string;
  readonly clock: Clock;
  readonly logger: LoggerService;
  readonly telemetry: PlatformAuthTelemetry;
}

/**
 * Everything one integration is made of, built once, in order, by {@link wirePlatformAuth}: the module's providers,
 * the CLI and the tests all come through here, so they all run the wiring production runs. It owns the integration's
 * one shutdown signal; its `on…` methods are the Nest lifecycle hooks the module's provider of it receives.
 */
export class PlatformAuthRuntime {
  readonly tokens: TokenProvider;
  readonly signer: AssertionSigner;
  readonly interceptor: PlatformAuthInterceptor;
  readonly httpService: PlatformHttpService;
  readonly platformFetch: PlatformFetch;
  // True private fields: the credentials and the cache must not show when someone inspects the container.
  readonly #shutdown = new AbortController();
  readonly #parts: {
    readonly startupCheck: ResolvedPlatformAuthConfig['startupCheck'];
    readonly startupLine: string;
    readonly logger: LoggerService;
    readonly telemetry: PlatformAuthTelemetry;
    readonly watch: CredentialsWatch;
    readonly holder: CredentialsHolder;
    readonly store?: TokenStoreHost;
    readonly client: TokenExchangeClient;
    readonly closeHttp: () => void;
    readonly detachInterceptor: () => void;
  };

  constructor(input: PlatformAuthWiringInput) {
    const { config, integration, clock, logger, telemetry } = input;
    const shutdown = this.#shutdown.signal;
    const holder = new CredentialsHolder(config.machineId, config.credentials, clock.now(), config.nextCredentials);
    this.signer = new AssertionSigner(config, clock, holder);
    const client = new TokenExchangeClient(config, () => clock.now());
    const nextPair = new NextPairSwitch(config, clock, holder, telemetry, logger);
    const attempts = new TokenExchangeAttempts(config, clock, this.signer, client, logger, nextPair);

    const store = config.tokenStore
      ? new TokenStoreHost({
          settings: config.tokenStore,
          identity: config,
          clock,
          integration,
          logger,
          observer: telemetry,
        })
      : undefined;
    const exchange: TokenSource = { exchange: (signal) => attempts.run(signal) };
    const observed = observedTokenSource(exchange, telemetry);
    const source = store ? store.decorate(observed) : observed;

    const tracker = new TokenStatusTracker();
    const cache = new TokenCache({
      clock,
      minExchangeIntervalMs: MIN_EXCHANGE_INTERVAL_MS,
      refreshBeforeExpirySeconds: config.refreshBeforeExpirySeconds,
      failureBackoffMs: config.failureBackoffMs,
      source,
      shutdown,
      listener: {
        exchanged: (report) => tracker.record(report),
        renewalFailed: (error) => {
          logger.warn(
            `Background token renewal failed; the current token is served until it expires. ${error.message}`,
          );
        },
      },
    });
    // A token belongs to the integration it was issued to: after a cut-over to another machineId it is not used.
    let machineId = holder.active.machineId;
    holder.onSwap((active) => {
      const current = cache.current;
      if (active.machineId !== machineId && current) cache.invalidate(current.accessToken);
      machineId = active.machineId;
    });

    const watch = new CredentialsWatch(
      config.credentialSources,
      config.credentialsReloadIntervalMs,
      clock,
      holder,
      telemetry,
      logger,
      config.nextCredentialSources,
      () => nextPair.filesCaughtUp(),
    );
    const rotator = new CredentialsRotator({
      clock,
      holder,
      observer: telemetry,
      logger,
      sharedStore: store !== undefined,
      shutdown,
      exchangeWith: (candidate, signal) => {
        const signer = new AssertionSigner(config, clock, candidate);
        const candidateAttempts = new TokenExchangeAttempts(config, clock, signer, client, logger);
        return telemetry.recordExchange(() => candidateAttempts.run(signal));
      },
    });
    this.tokens = new TokenProvider({
      cache,
      clockOffsetMs: () => attempts.clockOffsetMs,
      rotateCredentials: (rotation) => rotator.rotate(rotation),
      status: () =>
        tracker.snapshot({
          integration,
          now: clock.now(),
          state: cache.state,
          token: cache.current,
          holder,
          reload: watch.reloadStatus(),
          sharedStore: store?.status(),
          switched: nextPair.lastSwitch,
        }),
    });

    const interceptor = new PlatformAuthInterceptor(this.tokens, config.allowedOrigins, telemetry);
    this.interceptor = interceptor;
    const http = createPlatformHttpClient(config.baseUrl, interceptor);
    this.httpService = http.httpService;
    this.platformFetch = new PlatformFetch(
      config.baseUrl,
      new BearerPolicy(this.tokens, config.allowedOrigins, telemetry),
    );
    telemetry.observe({
      tokenExpiresAtMs: () => cache.current?.expiresAtMs,
      certificateNotAfterMs: () => certificateNotAfterMs(holder.active.credentials),
    });
    this.#parts = {
      startupCheck: config.startupCheck,
      startupLine: startupLine(config, integration, clock.now()),
      logger,
      telemetry,
      watch,
      holder,
      store,
      client,
      closeHttp: () => http.close(),
      detachInterceptor: () => interceptor.detachAll(),
    };
  }

  /** Says what was configured, connects the shared store before the first token is wanted, starts the watch. */
  async onModuleInit(): Promise<void> {
    this.#parts.logger.log(this.#parts.startupLine);
    await this.#parts.store?.connect();
    this.#parts.watch.start();
  }

  /**
   * With `startupCheck`, the first token is acquired while the application boots, so a wrong machineId or an
   * unreachable platform shows at deploy time: `'fail'` rejects `app.init()`/`listen()` with the
   * `TokenExchangeError`, `'warn'` logs it and lets the application start.
   */
  async onApplicationBootstrap(): Promise<void> {
    const { startupCheck, logger } = this.#parts;
    if (startupCheck === 'off') return;
    try {
      await this.tokens.getAccessToken();
    } catch (error) {
      if (startupCheck === 'fail' || !(error instanceof TokenExchangeError)) throw error;
      logger.warn(`Start-up check: no token could be acquired; the application starts anyway. ${error.message}`);
    }
  }

  /**
   * Torn down at application shutdown, after Nest has drained the HTTP server (not at module destroy, which comes
   * before the drain): requests still in flight finish their platform calls, token exchange included. Then the one
   * shutdown signal stops every part: exchanges in flight, rotations, the credential watch, the store, the sockets,
   * and the key is closed (a PKCS#11 token's sessions).
   */
  async onApplicationShutdown(): Promise<void> {
    const parts = this.#parts;
    this.#shutdown.abort(shutdownError());
    parts.watch.stop();
    parts.detachInterceptor();
    parts.closeHttp();
    await this.platformFetch.close();
    parts.client.destroy();
    parts.telemetry.close();
    await parts.store?.close();
    // After everything that could sign has stopped: the key's PKCS#11 sessions end here.
    await parts.holder.active.credentials.key.close();
    await parts.holder.next?.key.close();
  }
}

/** The composition root: builds one integration from its resolved configuration. */
export function wirePlatformAuth(input: PlatformAuthWiringInput): PlatformAuthRuntime {
  return new PlatformAuthRuntime(input);
}
