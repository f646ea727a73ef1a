import type { ConfigProblem } from './platform-auth.errors.js';
import { ConfigReport } from './options/config.report.js';
import { ownOptions, revealSecrets } from './options/own-options.util.js';
import { resolveSettings, type PlatformAuthSettings } from './options/options.resolver.js';
import type { PlatformAuthOptions } from './options/platform-auth-options.interface.js';
import { loadCredentials, type CredentialSources, type LoadedCredentials } from './credentials/credentials.loader.js';
import { resolveTokenStoreOptions, type ResolvedTokenStoreConfig } from './store/token-store.options.js';

/** Everything start-up validation produced: the settings, the parsed credentials, the shared store's settings. */
export interface ResolvedPlatformAuthConfig extends PlatformAuthSettings {
  readonly credentials: LoadedCredentials;
  /** Where the credentials came from, for re-reading `*_PATH` files. */
  readonly credentialSources: CredentialSources;
  /** The shared token store; absent when none is configured. */
  readonly tokenStore?: ResolvedTokenStoreConfig;
  readonly warnings: readonly ConfigProblem[];
}

/**
 * Validates every option, loads the credentials and checks the store settings, into one report: a
 * `PlatformAuthConfigError` lists every problem at once. `nowMs` is the injected clock's time (certificate validity).
 * The module, the CLI and the tests all resolve a configuration here, so they can never disagree about one.
 */
export function resolvePlatformAuthOptions(
  input: PlatformAuthOptions,
  nowMs: number,
  integration?: string,
): ResolvedPlatformAuthConfig {
  const options = revealSecrets(ownOptions(input));
  const report = new ConfigReport(integration);
  const settings = resolveSettings(options, report);
  const credentials = loadCredentials(options, nowMs, report);
  const tokenStore = resolveTokenStoreOptions(options, report);
  report.throwIfProblems();
  return {
    ...settings!,
    credentials: credentials!,
    credentialSources: pickCredentialSources(options, settings!.credentialsReloadIntervalMs !== undefined),
    tokenStore,
    warnings: report.warnings,
  };
}

/**
 * The sources the reloader reads again. Key text, certificate text and the passphrase are kept only when reloading is
 * on (it needs them to load a re-read file); otherwise nothing in the container holds them after start-up.
 */
function pickCredentialSources(options: PlatformAuthOptions, forReloading: boolean): CredentialSources {
  const { privateKeyPath, certificatePath, thumbprint, thumbprintAlgorithm } = options;
  if (!forReloading) return { privateKeyPath, certificatePath, thumbprint, thumbprintAlgorithm };
  const { privateKey, privateKeyPassphrase, certificate } = options;
  return {
    privateKey,
    privateKeyPath,
    privateKeyPassphrase,
    certificate,
    certificatePath,
    thumbprint,
    thumbprintAlgorithm,
  };
}
