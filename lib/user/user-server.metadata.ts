import * as oauth from 'oauth4webapi';
import { quotable, type ConfigReport } from '../options/config.report.js';
import { httpUrlProblem } from '../options/url.rules.js';
import { sanitizeRemoteText } from '../util/remote-text.util.js';
import type { UserClientAuthentication } from './platform-user-auth-options.interface.js';
import { ResponseTooLargeError, requestOptions } from './user-http.util.js';

/** What the module uses of an authorization server's metadata (RFC 8414 §2, OpenID Connect Discovery §3). */
export interface UserServerMetadata extends oauth.AuthorizationServer {
  readonly issuer: string;
  readonly authorization_endpoint: string;
  readonly token_endpoint: string;
}

/** The endpoints the module may call or send the browser to; each must be https, or http on loopback. */
const ENDPOINTS = [
  'authorization_endpoint',
  'token_endpoint',
  'revocation_endpoint',
  'end_session_endpoint',
  'jwks_uri',
] as const;

/**
 * Reads the server's metadata once, at start-up: OpenID Connect Discovery first (`{issuer}/.well-known/openid-configuration`),
 * then RFC 8414 (`/.well-known/oauth-authorization-server` before the issuer's path) when the first is not there.
 * The document must name exactly `issuer` (OpenID Connect Discovery §4.3, RFC 8414 §3.3), have the two endpoints
 * sign-in needs, support PKCE S256 and the configured client authentication when it lists them. Problems go to
 * `report` on `discovery`; bodies are bounded like token answers.
 */
export async function discoverServer(
  issuer: string,
  clientAuthentication: UserClientAuthentication,
  timeoutMs: number,
  report: ConfigReport,
): Promise<UserServerMetadata | undefined> {
  const issuerUrl = new URL(issuer);
  const insecure = issuerUrl.protocol === 'http:';
  let response: Response | undefined;
  try {
    for (const algorithm of ['oidc', 'oauth2'] as const) {
      response = await oauth.discoveryRequest(issuerUrl, { ...requestOptions(timeoutMs, insecure), algorithm });
      if (response.status !== 404) break;
    }
  } catch (error) {
    report.problem('discovery', `cannot read the metadata of ${issuer}: ${requestFailure(error)}`);
    return undefined;
  }
  if (response!.status !== 200) {
    report.problem(
      'discovery',
      `${issuer} publishes no metadata: OpenID Connect Discovery and RFC 8414 answered ${response!.status}; check issuer, or turn discovery off and set the paths`,
    );
    return undefined;
  }
  let document: Record<string, unknown>;
  try {
    // Compared below as a string; oauth4webapi's own comparison normalises the URL first.
    document = (await response!.json()) as Record<string, unknown>;
  } catch {
    report.problem('discovery', `the metadata of ${issuer} is not JSON`);
    return undefined;
  }
  if (typeof document !== 'object' || document === null || Array.isArray(document)) {
    report.problem('discovery', `the metadata of ${issuer} is not a JSON object`);
    return undefined;
  }
  return checkMetadata(document, issuer, clientAuthentication, report);
}

function checkMetadata(
  document: Record<string, unknown>,
  issuer: string,
  clientAuthentication: UserClientAuthentication,
  report: ConfigReport,
): UserServerMetadata | undefined {
  const problems = report.problems.length;
  if (document.issuer !== issuer) {
    const named = typeof document.issuer === 'string' ? quotable(sanitizeRemoteText(document.issuer) ?? '') : undefined;
    report.problem(
      'discovery',
      `the metadata names the issuer ${named ? `'${named}'` : 'otherwise'}, not '${issuer}' exactly: refused (a document for another server, or a proxy in the way); set issuer to the server's issuer identifier`,
    );
    return undefined;
  }
  for (const name of ENDPOINTS) {
    const value = document[name];
    const required = name === 'authorization_endpoint' || name === 'token_endpoint';
    if (value === undefined && !required) continue;
    const problem = endpointProblem(value);
    if (problem) report.problem('discovery', `the metadata's ${name} ${problem}`);
  }
  const challenges = document.code_challenge_methods_supported;
  if (Array.isArray(challenges) && !challenges.includes('S256'))
    report.problem(
      'discovery',
      'the server does not list S256 in code_challenge_methods_supported; PKCE S256 is required',
    );
  const methods = document.token_endpoint_auth_methods_supported;
  if (Array.isArray(methods) && !methods.includes(clientAuthentication))
    report.problem(
      'clientAuthentication',
      `the server does not support ${clientAuthentication} (token_endpoint_auth_methods_supported: ${methods.filter((m) => typeof m === 'string' && quotable(m)).join(', ')})`,
    );
  if (report.problems.length > problems) return undefined;
  return document as unknown as UserServerMetadata;
}

function endpointProblem(value: unknown): string | undefined {
  return typeof value !== 'string' || value === '' ? 'is missing' : httpUrlProblem(value);
}

function requestFailure(error: unknown): string {
  if (error instanceof ResponseTooLargeError) return error.message;
  if (error instanceof DOMException && (error.name === 'TimeoutError' || error.name === 'AbortError'))
    return 'no answer in time';
  const code = (error as { cause?: { code?: unknown } } | undefined)?.cause?.code;
  return `the server could not be reached${typeof code === 'string' ? ` (${code})` : ''}`;
}
