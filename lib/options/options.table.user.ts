import { PLATFORM_ROWS } from './options.table.platform.js';
import type { OptionRow } from './options.table.types.js';

/** The key of `private_key_jwt`: a `KeySource`, as machine authentication's `key`, from `PLATFORM_USER_*` variables. */
const USER_KEY_ROWS = {
  key: {
    kind: 'object',
    rule: '`private_key_jwt`: the key client assertions are signed with and its certificate, as the `key.*` rows say',
  },
  'key.privateKey': {
    env: 'PLATFORM_USER_PRIVATE_KEY',
    kind: 'pem',
    secret: true,
    rule: 'PEM text of the RSA key; this, `privateKeyPath`, `privateKeyUri` or `signer`',
  },
  'key.privateKeyPath': {
    env: 'PLATFORM_USER_PRIVATE_KEY_PATH',
    kind: 'path',
    rule: 'path of the PEM key file',
  },
  'key.privateKeyUri': {
    env: 'PLATFORM_USER_PRIVATE_KEY_URI',
    kind: 'text',
    secret: true,
    rule: '`pkcs11:` URI of a key in a PKCS#11 token, as machine authentication’s; needs the certificate',
  },
  'key.signer': {
    kind: 'instance',
    rule: "the application's signer (a KMS, say), as machine authentication's; needs the certificate",
  },
  'key.passphrase': {
    env: 'PLATFORM_USER_PRIVATE_KEY_PASSPHRASE',
    kind: 'text',
    secret: true,
    rule: 'for an encrypted PEM key',
  },
  'key.certificate': {
    env: 'PLATFORM_USER_CERTIFICATE',
    kind: 'pem',
    rule: 'PEM text of the key’s certificate: required with `privateKeyUri` or `signer`, optional with a PEM key, which it must then match',
  },
  'key.certificatePath': {
    env: 'PLATFORM_USER_CERTIFICATE_PATH',
    kind: 'path',
    rule: 'path of the PEM certificate file; this or `certificate`',
  },
} as const satisfies Record<string, OptionRow>;

/**
 * Every option of user sign-in (`PlatformUserAuthOptions`), in the same form as machine authentication's table:
 * its resolver, `platformUserAuthConfig` and docs/configuration.md read it. `user/` checks it against the interface.
 */
export const PLATFORM_USER_AUTH_OPTIONS = {
  baseUrl: { ...PLATFORM_ROWS.baseUrl, rule: '`https://{platform_domain}`; plain `http:` only on loopback' },
  clientId: { env: 'PLATFORM_USER_CLIENT_ID', kind: 'text', rule: 'required; the client registered for user sign-in' },
  redirectUri: {
    env: 'PLATFORM_USER_REDIRECT_URI',
    kind: 'url',
    rule: 'required; where the platform sends the browser back, registered with the client, compared exactly',
  },
  scope: {
    env: 'PLATFORM_USER_SCOPE',
    kind: 'text',
    rule: "space-separated scopes; unset: no `scope` parameter (the platform's default); `openid` asks for an ID token",
  },
  stateSecret: {
    env: 'PLATFORM_USER_STATE_SECRET',
    kind: 'text',
    secret: true,
    rule: 'required; at least 32 random bytes (`openssl rand -base64 32`), shared by every replica; keys the transaction and session cookies',
  },
  discovery: {
    env: 'PLATFORM_USER_DISCOVERY',
    kind: 'boolean',
    default: false,
    rule: "read the server's metadata once at start-up (OpenID Connect Discovery, else RFC 8414) instead of the paths",
  },
  clientAuthentication: {
    env: 'PLATFORM_USER_CLIENT_AUTH',
    kind: 'enum',
    values: ['none', 'client_secret_basic', 'client_secret_post', 'private_key_jwt'],
    default: 'none',
    rule: 'how the client authenticates at the token and revocation endpoints',
  },
  clientSecret: {
    env: 'PLATFORM_USER_CLIENT_SECRET',
    kind: 'text',
    secret: true,
    rule: 'for `client_secret_basic` and `client_secret_post`',
  },
  ...USER_KEY_ROWS,
  authorizePath: {
    kind: 'text',
    default: '/loginservice/connect/authorize',
    rule: 'the authorization endpoint below `baseUrl`; not with `discovery`',
  },
  tokenPath: {
    kind: 'text',
    default: '/loginservice/connect/token',
    rule: 'the token endpoint below `baseUrl` (an assumption, see docs/platform-contract.md); not with `discovery`',
  },
  revocationPath: { kind: 'text', rule: 'the revocation endpoint (RFC 7009) below `baseUrl`; default none' },
  endSessionPath: { kind: 'text', rule: 'the end-session endpoint below `baseUrl`; default none' },
  issuer: {
    kind: 'url',
    rule: 'the `iss` of authorization responses (RFC 9207), and with `discovery` the issuer whose metadata is read; default `baseUrl`',
  },
  // RFC 9700 §4.7: a transaction should not outlive the sign-in it protects; ten minutes at the most.
  transactionLifetimeSeconds: {
    kind: 'number',
    min: 30,
    max: 600,
    default: 600,
    rule: 'how long a sign-in may take, from `/login` to `/callback`; whole seconds',
  },
  sessionLifetimeSeconds: {
    kind: 'number',
    min: 60,
    max: 30 * 24 * 60 * 60,
    default: 8 * 60 * 60,
    rule: 'how long a signed-in session lasts, counted from sign-in (refreshing never extends it); whole seconds',
  },
  requestTimeoutMs: {
    kind: 'number',
    min: 1,
    max: 10 * 60 * 1000,
    default: 10_000,
    rule: 'bound on one request to the authorization server',
  },
  secureCookies: {
    kind: 'boolean',
    default: true,
    rule: 'cookies carry `Secure` and the `__Host-` prefix; browsers treat `http://localhost` as secure too',
  },
  clock: { kind: 'instance', rule: 'the time source of expiry checks; default the system clock' },
} as const satisfies Record<string, OptionRow>;
