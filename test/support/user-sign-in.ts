/** The RFC 7636 appendix B challenge: a valid S256 `code_challenge` for tests that never redeem the code. */
const RFC7636_CHALLENGE = 'E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM';

/** An authorization request URL (code flow, PKCE S256) for `clientId` returning to `redirectUri`. */
export function authorizationRequestUrl(authorizeUrl: string, clientId: string, redirectUri: string): URL {
  const url = new URL(authorizeUrl);
  for (const [name, value] of Object.entries({
    response_type: 'code',
    client_id: clientId,
    redirect_uri: redirectUri,
    code_challenge: RFC7636_CHALLENGE,
    code_challenge_method: 'S256',
  }))
    url.searchParams.set(name, value);
  return url;
}
