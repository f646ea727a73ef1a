/**
 * The platform's numbers and names as the emulator knows them, written out here on purpose instead of imported from
 * the library: the emulator is an independent check of the client, so a wrong constant in the library must not
 * silently become the emulator's rule too. See docs/platform-contract.md.
 */
export const TOKEN_PATH = '/loginservice/connect/token';
export const CLIENT_CERTIFICATE_GRANT = 'clientcertificate';
/** Both `exp − iat` and `iat − nbf` are at most five minutes. */
export const MAX_ASSERTION_LIFETIME_SECONDS = 300;
/** "About ten minutes", the platform's stated access token lifetime. */
export const DEFAULT_TOKEN_LIFETIME_SECONDS = 600;
/** The interactive user authorization endpoint (docs/platform-contract.md#user-sign-in). */
export const AUTHORIZE_PATH = '/loginservice/connect/authorize';
/** PLACEHOLDER: who the bearer of a user token is (the platform's user APIs are not published). */
export const ME_PATH = '/api/me';
