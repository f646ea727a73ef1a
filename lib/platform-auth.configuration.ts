import type { ConfigProblem } from './platform-auth.errors.js';
import { ConfigReport, type SettingNames } from './options/config.report.js';
import { readOptions, type ReadPlatformAuthOptions } from './options/options.read.js';
import { resolveSettings, type PlatformAuthSettings } from './options/options.resolver.js';
import type { PlatformAuthOptions } from './options/platform-auth-options.interface.js';
import { openCredentials, type CredentialSources, type LoadedCredentials } from './credentials/credentials.loader.js';
import { openNextCredentials } from './credentials/next-credentials.loader.js';
import { pairSources } from './credentials/key-pair.sources.js';
import { resolveTokenStoreOptions, type ResolvedTokenStoreConfig } from './store/token-store.options.js';
import { resolveRateLimitOptions, type ResolvedRateLimit } from './calls/rate-limit/rate-limit.options.js';

/** Everything start-up validation produced: the settings, the parsed credentials, the shared store's settings. */
export interface ResolvedPlatformAuthConfig extends PlatformAuthSettings {
  readonly credentials: LoadedCredentials;
  /** Where the credentials came from, for re-reading `*_PATH` files. */
  readonly credentialSources: CredentialSources;
  /** The next pair (`next`), checked like the current one; absent when none is configured. */
  readonly nextCredentials?: LoadedCredentials;
  /** Where the next pair came from, for re-reading its files. */
  readonly nextCredentialSources?: CredentialSources;
  /** How the settings are named in messages, for the checks of files re-read after start-up. */
  readonly settingNames: SettingNames;
  /** The shared token store; absent when none is configured. */
  readonly tokenStore?: ResolvedTokenStoreConfig;
  /** The rate limit of calls to the platform's APIs; absent when none is configured. */
  readonly rateLimit?: ResolvedRateLimit;
  readonly warnings: readonly ConfigProblem[];
}

/**
 * Validates every option, loads the credentials and checks the store settings, into one report: a
 * `PlatformAuthConfigError` lists every problem at once. The key is opened wherever it is (a PEM key, a PKCS#11
 * token, the application's signer) and proven by a test signature, its problems in the same report. `nowMs` is the
 * injected clock's time (certificate validity); `env` is checked for mistyped `PLATFORM_*` variables. Start-up reaches
 * it through `loadIntegration` (`platform-auth.builder.ts`), so forRoot, a tenant and the CLI never disagree about a
 * configuration. `names`: whose settings they are (a named integration's variables; a tenant's, by option only). The resolved configuration owns the opened key: close it (`credentials.key.close()`), or hand it to
 * the runtime, which closes it at shutdown.
 */
export async function loadPlatformAuthConfig(
  input: PlatformAuthOptions,
  nowMs: number,
  names: SettingNames = {},
  env: Readonly<Record<string, string | undefined>> = process.env,
): Promise<ResolvedPlatformAuthConfig> {
  const report = ConfigReport.naming(names);
  const options = readOptions(input, report);
  const settings = resolveSettings(options, report);
  const credentials = await openCredentials(pairSources(options, 'key')!, nowMs, report);
  const nextSources = pairSources(options, 'next');
  const next = nextSources && (await openNextCredentials(nextSources, credentials, nowMs, report));
  const tokenStore = resolveTokenStoreOptions(options, report);
  const rateLimit = resolveRateLimitOptions(options, report);
  report.checkVariables(env);
  if (report.problems.length > 0) {
    await credentials?.key.close();
    await next?.key.close();
  }
  report.throwIfProblems();
  return { ...resolved(options, settings!, credentials!, tokenStore, report, next), rateLimit };
}

function resolved(
  options: ReadPlatformAuthOptions,
  settings: PlatformAuthSettings,
  credentials: LoadedCredentials,
  tokenStore: ResolvedTokenStoreConfig | undefined,
  report: ConfigReport,
  nextCredentials?: LoadedCredentials,
): ResolvedPlatformAuthConfig {
  // Files are re-read only for a PEM key: a token's or a signer's key stays where it is.
  const reloading = settings.credentialsReloadIntervalMs !== undefined && credentials.key.source === 'pem';
  if (settings.credentialsReloadIntervalMs !== undefined && !reloading) {
    report.warn(
      'credentialsReloadIntervalMs',
      `is ignored: the key is not a PEM file (${credentials.key.source === 'pkcs11' ? 'key.privateKeyUri' : 'key.signer'}); nothing is re-read`,
    );
  }
  return {
    ...settings,
    credentialsReloadIntervalMs: reloading ? settings.credentialsReloadIntervalMs : undefined,
    credentials,
    credentialSources: pickCredentialSources(options, reloading),
    nextCredentials,
    nextCredentialSources: nextCredentials && pickNextCredentialSources(options, reloading),
    settingNames: report.names,
    tokenStore,
    warnings: report.warnings,
  };
}

/**
 * The sources the reloader reads again. Key text, certificate text and the passphrase are kept only when reloading is
 * on (it needs them to load a re-read file); otherwise nothing in the container holds them after start-up.
 */
function pickCredentialSources(options: ReadPlatformAuthOptions, forReloading: boolean): CredentialSources {
  return pickSources(pairSources(options, 'key')!, forReloading);
}

/** The next pair's files, for the reloader; its inline text and passphrase only while reloading, as for the current. */
function pickNextCredentialSources(options: ReadPlatformAuthOptions, forReloading: boolean): CredentialSources {
  return pickSources(pairSources(options, 'next')!, forReloading);
}

function pickSources(sources: CredentialSources, forReloading: boolean): CredentialSources {
  const { privateKeyPath, certificatePath, thumbprint, thumbprintAlgorithm, names } = sources;
  if (!forReloading) return { privateKeyPath, certificatePath, thumbprint, thumbprintAlgorithm, names };
  const { privateKey, passphrase, certificate } = sources;
  return {
    names,
    privateKey,
    privateKeyPath,
    passphrase,
    certificate,
    certificatePath,
    thumbprint,
    thumbprintAlgorithm,
  };
}
