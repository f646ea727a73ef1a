import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { ThumbprintAlgorithm } from '../../options/platform-auth-options.interface.js';
import { AUTHORIZE_PATH, DEFAULT_TOKEN_LIFETIME_SECONDS, TOKEN_PATH } from './emulator.constants.js';
import { AccessTokenStore } from './emulator.access-tokens.js';
import { AssertionVerifier } from './emulator.assertion-verifier.js';
import { FaultQueues } from './emulator.faults.js';
import { EmulatorInspector } from '../inspector/emulator.inspector.js';
import { EmulatorControl } from './emulator.control.js';
import { EmulatorTraffic } from './emulator.traffic.js';
import { PlaceholderApi } from './emulator.placeholder-api.js';
import { IntegrationRegistry } from './emulator.registry.js';
import { TokenEndpoint } from './emulator.token-endpoint.js';
import { UserFlow } from '../user-flow/emulator.user-flow.js';
import type {
  RegisteredUserClient,
  RegisterUserClientInput,
  TestUser,
  UserFlowRecord,
} from '../user-flow/user-flow.types.js';
import type {
  EmulatedIntegration,
  EmulatorCounters,
  EmulatorFault,
  FaultTarget,
  IntegrationPermission,
  PlatformEmulatorOptions,
  RegisteredIntegration,
  RegisterIntegrationInput,
  TokenRequestRecord,
} from './emulator.types.js';
import { checkOptions, checkTokenLifetime, emulatedIntegration } from './emulator.options.js';
import { createTestCredentials } from '../test-credentials.util.js';

const DEFAULT_JOURNAL_LIMIT = 1000;
const LISTEN_BACKLOG = 4096;
const KEEP_ALIVE_TIMEOUT_MS = 30_000;

/**
 * The platform's side of docs/platform-contract.md, on a real HTTP server on loopback: a registry of system
 * integrations, the token endpoint with every assertion rule, access tokens checked by placeholder protected routes,
 * and controls for tests (clock offset, one-shot faults, a journal, counters). Every instance is independent of every other.
 *
 * ```ts
 * const platform = await PlatformEmulator.start();
 * const integration = await platform.createIntegration();
 * // PlatformAuthModule.forRoot({ ...integration.moduleOptions })
 * await platform.close();
 * ```
 */
export class PlatformEmulator {
  /** `http://127.0.0.1:PORT`, without a trailing slash: the `baseUrl` to configure. */
  readonly url: string;
  readonly tokenUrl: string;
  /** Where apps send browsers to sign in (Authorization Code + PKCE). */
  readonly authorizeUrl: string;
  /** The `aud` the token endpoint expects. */
  readonly audience: string;

  private readonly baseNow: () => number;
  private clockOffsetMs: number;
  private tokenLifetimeSeconds: number;
  private readonly thumbprintAlgorithm: ThumbprintAlgorithm;
  private readonly acceptCompactJwt: boolean;
  private readonly registry: IntegrationRegistry;
  private readonly accessTokens: AccessTokenStore;
  private readonly userFlow: UserFlow;
  private readonly faults = new FaultQueues();
  private readonly inspector?: EmulatorInspector;
  /** @internal Handlers without a socket (`nestjs-platform-auth/testing/msw`) answer through it, as the server does. */
  readonly traffic: EmulatorTraffic;
  private readonly onCertificateReplaced?: PlatformEmulatorOptions['onCertificateReplaced'];
  /** Aborted by `close()`, which cancels pending `delay` faults. */
  private readonly shutdown = new AbortController();
  private closed?: Promise<void>;

  private constructor(
    private readonly server: Server,
    url: string,
    options: PlatformEmulatorOptions,
  ) {
    this.url = url;
    this.tokenUrl = url + TOKEN_PATH;
    this.authorizeUrl = url + AUTHORIZE_PATH;
    this.audience = options.audience ?? new URL(url).host;
    this.baseNow = options.now ?? Date.now;
    this.clockOffsetMs = options.clockOffsetMs ?? 0;
    this.tokenLifetimeSeconds = options.tokenLifetimeSeconds ?? DEFAULT_TOKEN_LIFETIME_SECONDS;
    this.thumbprintAlgorithm = options.thumbprintAlgorithm ?? 'sha1';
    const encodings = options.tokenEncodings ?? ['jwt', 'base64'];
    this.acceptCompactJwt = encodings.includes('jwt');
    const journalLimit = options.journalLimit ?? DEFAULT_JOURNAL_LIMIT;

    const now = (): number => this.now();
    this.registry = new IntegrationRegistry(this.thumbprintAlgorithm);
    this.accessTokens = new AccessTokenStore(now);
    this.userFlow = new UserFlow({
      now,
      issuer: url,
      machineTokens: this.accessTokens,
      tokenLifetimeSeconds: () => this.tokenLifetimeSeconds,
      invalidClientStatus: options.invalidClientStatus ?? 400,
      journalLimit,
      maxPendingSignIns: options.maxPendingSignIns,
    });
    const tokenEndpoint = new TokenEndpoint({
      verifier: new AssertionVerifier({
        registry: this.registry,
        audience: this.audience,
        acceptCompactJwt: this.acceptCompactJwt,
        acceptBase64: encodings.includes('base64'),
        now,
        leewayMs: (options.leewaySeconds ?? 0) * 1000,
      }),
      tokens: this.accessTokens,
      tokenLifetimeSeconds: () => this.tokenLifetimeSeconds,
      invalidClientStatus: options.invalidClientStatus ?? 400,
      userGrants: this.userFlow.grants,
    });
    if (options.inspector) {
      const parts = { registry: this.registry, tokens: this.accessTokens, faults: this.faults };
      this.inspector = new EmulatorInspector({
        emulator: this,
        ...parts,
        now,
        clockOffsetMs: () => this.clockOffsetMs,
        signInSteps: () => this.userJournal,
      });
    }
    const control = options.control
      ? new EmulatorControl({ url, registry: this.registry, faults: this.faults, emulator: this })
      : undefined;
    this.onCertificateReplaced = options.onCertificateReplaced;
    this.traffic = new EmulatorTraffic({
      now,
      tokenEndpoint,
      placeholderApi: new PlaceholderApi(this.accessTokens, this.registry),
      userFlow: this.userFlow,
      faults: this.faults,
      inspector: this.inspector,
      control,
      shutdown: this.shutdown.signal,
      journalLimit,
    });
    server.on('request', (req, res) => void this.traffic.handle(req, res));
  }

  /** Listens on `host:port` (default `127.0.0.1`, a random free port) and resolves once connections are accepted. */
  static async start(options: PlatformEmulatorOptions = {}): Promise<PlatformEmulator> {
    checkOptions(options);
    const host = options.host ?? '127.0.0.1';
    // Idle keep-alive sockets are kept well past the 4 s after which the library's agents drop them, so a burst of
    // re-sends on a loaded machine never reuses a socket the emulator is closing (a reset no platform call would see
    // from a platform that announces its keep-alive timeout, as Node's servers do).
    const server = createServer();
    server.keepAliveTimeout = KEEP_ALIVE_TIMEOUT_MS;
    await new Promise<void>((resolve, reject) => {
      server.once('error', reject);
      // Node's default backlog (511) overflows when a test fires ~800 requests at once on fresh connections: the
      // kernel drops the extra SYNs and the client retries them a full second later.
      server.listen({ port: options.port ?? 0, host, backlog: LISTEN_BACKLOG }, () => {
        server.off('error', reject);
        resolve();
      });
    });
    const { port } = server.address() as AddressInfo;
    const urlHost = host.includes(':') ? `[${host}]` : host;
    return new PlatformEmulator(server, `http://${urlHost}:${port}`, options);
  }

  /** Adds a system integration, as the Administration Portal does. Throws when its certificate is already registered. */
  registerIntegration(input: RegisterIntegrationInput): RegisteredIntegration {
    return this.registry.register(input);
  }

  /**
   * Adds many system integrations at once, all or none: every input is checked before any is registered. Lookups
   * by thumbprint and machineId are keyed, so a token request takes as long with 10,000 integrations as with one.
   */
  registerIntegrations(inputs: readonly RegisterIntegrationInput[]): RegisteredIntegration[] {
    return this.registry.registerAll(inputs, 'registerIntegrations');
  }

  /** A throwaway key and certificate, registered as a new integration, with the settings an app needs to use it. */
  async createIntegration(input: Omit<RegisterIntegrationInput, 'certificatePem'> = {}): Promise<EmulatedIntegration> {
    // Validity is centred on the client's clock (`now`, without the offset): the library checks it at start-up.
    const credentials = await createTestCredentials({
      thumbprintAlgorithm: this.thumbprintAlgorithm,
      now: this.baseNow(),
    });
    const integration = this.registerIntegration({ ...input, certificatePem: credentials.certificatePem });
    return emulatedIntegration(integration, credentials, {
      url: this.url,
      audience: this.audience,
      thumbprintAlgorithm: this.thumbprintAlgorithm,
      acceptCompactJwt: this.acceptCompactJwt,
    });
  }

  /** Registers a public client for user sign-in: its id and the exact redirect URIs it may use. */
  registerUserClient(input: RegisterUserClientInput): RegisteredUserClient {
    return this.userFlow.directory.registerClient(input);
  }

  /** Adds (or replaces, by id) someone who can sign in on the emulator's page. */
  addTestUser(user: TestUser): void {
    this.userFlow.directory.addUser(user);
  }

  get testUsers(): TestUser[] {
    return this.userFlow.directory.allUsers;
  }

  /** The steps of user sign-ins, oldest first: authorize, sign-in, token, me (a snapshot; no codes or tokens). */
  get userJournal(): readonly UserFlowRecord[] {
    return this.userFlow.journal;
  }

  /** Registers a new certificate on an existing integration (the old one stops working): a rotation's portal step. */
  replaceCertificate(machineId: string, certificatePem: string): RegisteredIntegration {
    const integration = this.registry.replaceCertificate(machineId, certificatePem);
    this.onCertificateReplaced?.(integration, certificatePem);
    return integration;
  }

  setIntegrationStatus(machineId: string, status: string): void {
    this.registry.setStatus(machineId, status);
  }

  setPermissions(machineId: string, permissions: IntegrationPermission[]): void {
    this.registry.setPermissions(machineId, permissions);
  }

  /** Emulator time becomes `now() + ms`: the platform's clock ahead of (positive) or behind the client's. */
  setClockOffset(ms: number): void {
    if (!Number.isFinite(ms)) throw new Error(`setClockOffset: ms must be a finite number, got ${String(ms)}`);
    this.clockOffsetMs = ms;
  }

  /** `expires_in` of tokens issued from now on; tokens already issued keep theirs. */
  setTokenLifetime(seconds: number): void {
    checkTokenLifetime(seconds, 'setTokenLifetime');
    this.tokenLifetimeSeconds = seconds;
  }

  /** True when the token was usable and is not any more. */
  revokeToken(accessToken: string): boolean {
    return this.accessTokens.revoke(accessToken);
  }

  /** Revokes every usable token; returns how many there were. */
  revokeAllTokens(): number {
    return this.accessTokens.revokeAll();
  }

  /** Queues a one-shot fault for the next request to `target`: the token endpoint (default), or anything else. */
  injectFault(fault: EmulatorFault, target: FaultTarget = 'token'): void {
    this.faults.push(fault, target);
  }

  /** The inspector page (`inspector: true`), `url + '/_emulator/'`; undefined without it. */
  get inspectorUrl(): string | undefined {
    return this.inspector?.url;
  }

  /** Token requests received, oldest first (a snapshot; at most `journalLimit` entries). */
  get journal(): readonly TokenRequestRecord[] {
    return this.traffic.journal;
  }

  /** A snapshot of the counters. */
  get counters(): EmulatorCounters {
    return this.traffic.counters;
  }

  resetCounters(): void {
    this.traffic.resetCounters();
  }

  /**
   * Stops listening, destroys every connection (keep-alive and hanging ones included) and cancels pending delays.
   * Safe to call more than once.
   */
  close(): Promise<void> {
    this.closed ??= new Promise<void>((resolve) => {
      this.shutdown.abort();
      this.server.close(() => resolve());
      this.server.closeAllConnections();
    });
    return this.closed;
  }

  private now(): number {
    return this.baseNow() + this.clockOffsetMs;
  }
}
