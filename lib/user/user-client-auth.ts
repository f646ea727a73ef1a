import { randomUUID } from 'node:crypto';
import * as oauth from 'oauth4webapi';
import type { AssertionKey } from '../credentials/assertion-key.interface.js';
import { signCompactJws } from '../credentials/compact-jws.util.js';
import { describeSource, openCredentials } from '../credentials/credentials.loader.js';
import { InMemoryAssertionKey } from '../credentials/in-memory.assertion-key.js';
import { pairSources } from '../credentials/key-pair.sources.js';
import { keySourceKind } from '../credentials/key-source.loader.js';
import { loadPrivateKey } from '../credentials/private-key.loader.js';
import type { ConfigReport } from '../options/config.report.js';
import type { Clock } from '../platform-auth.clock.js';
import { reveal } from '../util/secret.util.js';
import { CLIENT_ASSERTION_LIFETIME_SECONDS, USER_CLIENT_AUTHENTICATIONS } from './platform-user-auth.constants.js';
import type { PlatformUserAuthOptions, UserClientAuthentication } from './platform-user-auth-options.interface.js';
import type { ResolvedUserAuthConfig } from './user-options.resolver.js';

const KEY_OPTIONS = ['privateKey', 'privateKeyPath', 'privateKeyUri', 'signer'] as const;

/** The configured method, checked with the settings it needs (and those it would silently ignore). */
export function checkClientAuthentication(
  options: PlatformUserAuthOptions,
  report: ConfigReport,
): UserClientAuthentication {
  const method = options.clientAuthentication ?? 'none';
  if (!(USER_CLIENT_AUTHENTICATIONS as readonly unknown[]).includes(method)) {
    report.problem('clientAuthentication', `must be one of ${USER_CLIENT_AUTHENTICATIONS.join(', ')}`);
    return 'none';
  }
  const usesSecret = method === 'client_secret_basic' || method === 'client_secret_post';
  if (usesSecret && (typeof options.clientSecret !== 'string' || options.clientSecret === ''))
    report.problem('clientSecret', `is required with clientAuthentication ${method}`);
  if (!usesSecret && options.clientSecret !== undefined)
    report.problem(
      'clientSecret',
      `is set, but clientAuthentication is ${method}: set client_secret_basic or client_secret_post, or remove it`,
    );
  if (method !== 'private_key_jwt') {
    const stray = KEY_OPTIONS.find((name) => options.key?.[name] !== undefined);
    if (stray)
      report.problem(
        `key.${stray}`,
        `is set, but clientAuthentication is ${method}; the key is used by private_key_jwt only`,
      );
  }
  return method;
}

/**
 * The key of `private_key_jwt`, from the same sources and through the same checks as machine authentication's: a
 * PEM key (with its certificate, when one is given, which it must match), a key in a PKCS#11 token or the
 * application's signer (both with the certificate every signature is checked against, and one test signature).
 */
export async function openClientKey(
  options: PlatformUserAuthOptions,
  nowMs: number,
  report: ConfigReport,
): Promise<AssertionKey | undefined> {
  const sources = pairSources(options, 'key')!;
  const withCertificate = sources.certificate !== undefined || sources.certificatePath !== undefined;
  const kind = keySourceKind(sources, report);
  if (kind === undefined) return undefined;
  if (kind !== 'pem' || withCertificate) return (await openCredentials(sources, nowMs, report))?.key;
  const privateKey = loadPrivateKey(sources, report);
  if (!privateKey) return undefined;
  return new InMemoryAssertionKey(privateKey, describeSource(sources, 'privateKey'));
}

const encoder = new TextEncoder();

/**
 * How oauth4webapi authenticates the client on each request. The secret is revealed per request and never held as
 * text; a `private_key_jwt` assertion (RFC 7523 §3, OpenID Connect Core §9) is signed for each request through the
 * machine module's `signCompactJws`, whatever holds the key, with `aud` the issuer as RFC 7523bis asks.
 */
export function clientAuthenticationFor(config: ResolvedUserAuthConfig, clock: Clock): oauth.ClientAuth {
  switch (config.clientAuthentication) {
    case 'client_secret_basic':
      return (as, client, body, headers) =>
        oauth.ClientSecretBasic(reveal(config.clientSecret!)!)(as, client, body, headers);
    case 'client_secret_post':
      return (as, client, body, headers) =>
        oauth.ClientSecretPost(reveal(config.clientSecret!)!)(as, client, body, headers);
    case 'private_key_jwt':
      return async (as, client, body) => {
        const now = Math.floor(clock.now() / 1000);
        const claims = {
          iss: client.client_id,
          sub: client.client_id,
          aud: as.issuer,
          jti: randomUUID(),
          iat: now,
          nbf: now,
          exp: now + CLIENT_ASSERTION_LIFETIME_SECONDS,
        };
        const assertion = await signCompactJws(
          config.clientKey!,
          { alg: 'RS256' },
          encoder.encode(JSON.stringify(claims)),
        );
        body.set('client_id', client.client_id);
        body.set('client_assertion_type', 'urn:ietf:params:oauth:client-assertion-type:jwt-bearer');
        body.set('client_assertion', assertion);
      };
    default:
      return oauth.None();
  }
}
