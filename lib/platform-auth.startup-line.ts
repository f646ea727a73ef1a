import { certificateNotAfterMs } from './credentials/active-credentials.js';
import { daysLeft } from './credentials/certificate.loader.js';
import type { ResolvedPlatformAuthConfig } from './platform-auth.configuration.js';

/** Enough of the thumbprint to match it against the portal's, not a stand-in for it. */
const THUMBPRINT_PREFIX_LENGTH = 8;

/**
 * The one `log` line an integration writes when it starts: which integration, which platform, which certificate
 * (thumbprint prefix and days to expiry) and where tokens are kept. What a new user needs to see that it is
 * configured as they meant; never the machineId, a key, a passphrase, a token or the store's URL (it may hold a
 * password).
 */
export function startupLine(
  config: Pick<ResolvedPlatformAuthConfig, 'baseUrl' | 'credentials' | 'tokenStore'>,
  integration: string,
  nowMs: number,
): string {
  const { credentials } = config;
  const thumbprint = `${credentials.thumbprint.slice(0, THUMBPRINT_PREFIX_LENGTH)}…`;
  const notAfterMs = certificateNotAfterMs(credentials);
  const certificate =
    notAfterMs === undefined
      ? `thumbprint ${thumbprint} (no certificate configured, expiry unknown)`
      : `certificate ${thumbprint} valid until ${new Date(notAfterMs).toISOString().slice(0, 10)} (${daysLeft(
          notAfterMs,
          nowMs,
        )} days left)`;
  const store = config.tokenStore
    ? config.tokenStore.connection
      ? 'shared (Redis)'
      : 'shared (a TokenStore of the app)'
    : 'in-process';
  return `Integration '${integration}' started: platform ${new URL(config.baseUrl).host}, ${certificate}, token store ${store}`;
}
