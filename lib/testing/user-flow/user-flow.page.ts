import { randomBytes } from 'node:crypto';
import type { EmulatorResponse } from '../emulator/emulator.http.js';
import { escapeHtml } from '../inspector/inspector.html.js';
import type { RegisteredUserClient, TestUser } from './user-flow.types.js';

export const DECISION_PATH = '/loginservice/connect/authorize/decision';

/**
 * Headers of every page: nothing loads from anywhere (no scripts at all), the one style block is allowed by
 * nonce, forms post only to the emulator (and follow its redirect to the client), and no page can be framed.
 */
function pageHeaders(styleNonce: string, formTarget?: string): Record<string, string> {
  const formAction = formTarget ? `'self' ${formTarget}` : `'self'`;
  return {
    'content-type': 'text/html; charset=utf-8',
    'content-security-policy': `default-src 'none'; style-src 'nonce-${styleNonce}'; form-action ${formAction}; frame-ancestors 'none'; base-uri 'none'`,
    'x-frame-options': 'DENY',
    'x-content-type-options': 'nosniff',
    'referrer-policy': 'no-referrer',
    'cache-control': 'no-store',
  };
}

function page(title: string, body: string, status: number, formTarget?: string): EmulatorResponse {
  const nonce = randomBytes(16).toString('base64');
  const html = `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width">
<title>${escapeHtml(title)}</title>
<style nonce="${nonce}">
body{font:16px system-ui,sans-serif;max-width:32rem;margin:3rem auto;padding:0 1rem;color:#222}
h1{font-size:1.4rem}.note{color:#666;font-size:.9rem}label{display:block;margin:.4rem 0}
button{font:inherit;padding:.4rem 1.2rem;margin-right:.6rem}.error{color:#a00}
</style></head><body>
<p class="note">Platform emulator (nestjs-platform-auth/testing) — not the real platform</p>
<h1>${escapeHtml(title)}</h1>
${body}
</body></html>`;
  return { status, headers: pageHeaders(nonce, formTarget), body: html };
}

/** The sign-in page: pick a test user, approve or deny. The form carries only the pending request's id. */
export function signInPage(
  client: RegisteredUserClient,
  redirectUri: string,
  users: readonly TestUser[],
  requestId: string,
  scope: string | undefined,
): EmulatorResponse {
  const choices = users
    .map(
      (user, index) =>
        `<label><input type="radio" name="user" value="${escapeHtml(user.id)}"${index === 0 ? ' checked' : ''}> ${escapeHtml(user.name)} &lt;${escapeHtml(user.email)}&gt;</label>`,
    )
    .join('\n');
  const body = `<p><strong>${escapeHtml(client.name)}</strong> asks to sign you in${scope ? ` with scope <code>${escapeHtml(scope)}</code>` : ''}.</p>
<form method="post" action="${DECISION_PATH}">
<input type="hidden" name="request" value="${escapeHtml(requestId)}">
<fieldset><legend>Sign in as</legend>
${choices}
</fieldset>
<p><button type="submit" name="decision" value="approve">Approve</button>
<button type="submit" name="decision" value="deny">Deny</button></p>
</form>`;
  return page('Sign in to the platform', body, 200, new URL(redirectUri).origin);
}

/** A request that cannot be sent back to the client (RFC 6749 §4.1.2.1): said to the user, never redirected. */
export function errorPage(status: number, error: string, description: string): EmulatorResponse {
  const body = `<p class="error"><strong>${escapeHtml(error)}</strong>: ${escapeHtml(description)}</p>
<p class="note">The request is not sent back to the application, because its client or redirect URI could not be trusted.</p>`;
  return page('Sign-in request refused', body, status);
}
