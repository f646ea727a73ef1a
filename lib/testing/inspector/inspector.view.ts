import { html, type SafeHtml } from './inspector.html.js';
import { renderGenericRecord, renderJournal } from './inspector.journal.js';
import type { InspectorSnapshot } from './inspector.model.js';
import { ACTIVE_STATUS, ALL_PERMISSIONS } from '../emulator/emulator.registry.js';

export const INSPECTOR_PATH = '/_emulator';
const FAULT_KINDS = ['status', 'delay', 'hang', 'drop', 'malformed-json', 'html'] as const;

export interface PageState {
  readonly csrfToken: string;
  /** What the last action did, or why it failed. */
  readonly notice?: { readonly ok: boolean; readonly text: string };
}

/** The whole page, server-rendered; its stylesheet and script come from the emulator itself. */
export function renderPage(snapshot: InspectorSnapshot, state: PageState): string {
  const { emulator } = snapshot;
  const form = (action: string, body: SafeHtml, className = 'inline') =>
    html`<form method="post" action="${INSPECTOR_PATH}/actions/${action}" class="${className}">
      <input type="hidden" name="csrf" value="${state.csrfToken}" />${body}
    </form>`;
  const page = html`<html lang="en">
    <head>
      <meta charset="utf-8" />
      <meta name="viewport" content="width=device-width, initial-scale=1" />
      <title>Platform emulator inspector</title>
      <link rel="stylesheet" href="${INSPECTOR_PATH}/inspector.css" />
      <link rel="icon" href="${INSPECTOR_PATH}/favicon.svg" />
      <script src="${INSPECTOR_PATH}/inspector.js" defer></script>
    </head>
    <body>
      <header>
        <h1>Platform emulator inspector</h1>
        <p class="mono">${emulator.url} · token endpoint ${emulator.tokenUrl} · aud ${emulator.audience}</p>
        <p>
          Emulator clock <time id="emulator-time" datetime="${emulator.time}">${emulator.time}</time>, offset
          ${emulator.clockOffsetMs / 1000} s · <a href="${INSPECTOR_PATH}/journal.json">journal.json</a> ·
          <label class="auto"><input type="checkbox" id="auto-refresh" /> refresh every 2 s</label>
        </p>
        ${state.notice && html`<p class="notice ${state.notice.ok ? 'ok' : 'failed'}" role="status">${state.notice.text}</p>`}
        <nav>
          <a href="#integrations">Integrations</a> <a href="#journal">Journal</a> <a href="#tokens">Tokens</a>
          <a href="#counters">Counters</a> <a href="#faults">Faults</a> <a href="#clock">Clock</a>
          <a href="#sign-in">User sign-in</a>
        </nav>
      </header>
      <main>
        <section id="integrations">
          <h2>Integrations</h2>
          ${
            snapshot.integrations.length === 0
              ? html`<p class="empty">No system integration is registered.</p>`
              : html`<table>
                  <thead>
                    <tr>
                      <th>name</th>
                      <th>machineId</th>
                      <th>thumbprint</th>
                      <th>status</th>
                      <th>permissions</th>
                      <th>certificate</th>
                    </tr>
                  </thead>
                  <tbody>
                    ${snapshot.integrations.map((integration) => {
                      const active = integration.status === ACTIVE_STATUS;
                      const ids = html`<input type="hidden" name="machineId" value="${integration.machineId}" />`;
                      return html`<tr data-machine-id="${integration.machineId}">
                        <td>${integration.name}</td>
                        <td class="mono">${integration.machineId}</td>
                        <td class="mono">
                          ${integration.thumbprint} <small>${integration.thumbprintAlgorithm}</small>
                        </td>
                        <td>
                          <span class="badge ${active ? 'accepted' : 'rejected'}">${integration.status}</span>
                          ${form('status', html`${ids}<input type="hidden" name="status" value="${active ? 'Suspended' : ACTIVE_STATUS}" /><button>${active ? 'Suspend' : 'Activate'}</button>`)}
                        </td>
                        <td>
                          ${form(
                            'permissions',
                            html`${ids}${ALL_PERMISSIONS.map(
                                (permission) =>
                                  html`<label
                                    ><input
                                      type="checkbox"
                                      name="permission"
                                      value="${permission}"
                                      ${integration.permissions.includes(permission) ? html` checked` : ''}
                                    />
                                    ${permission}</label
                                  > `,
                              )}<button>Save</button>`,
                          )}
                        </td>
                        <td class="${integration.certificate.validNow ? '' : 'failed'}">
                          ${integration.certificate.validFrom} →
                          ${integration.certificate.validTo}${integration.certificate.validNow ? '' : ' (not valid at the emulator clock)'}
                          <details>
                            <summary>Upload a new certificate</summary>
                            ${form(
                              'certificate',
                              html`${ids}<label
                                  >file <input type="file" class="certificate-file" accept=".cer,.crt,.pem"
                                /></label>
                                <label
                                  >PEM (the portal's upload: the current certificate is refused from then on)
                                  <textarea
                                    name="certificatePem"
                                    rows="6"
                                    required
                                    placeholder="paste the certificate, PEM (next-publickey.cer)"
                                  ></textarea></label
                                ><button>Replace certificate</button>`,
                              'stacked',
                            )}
                          </details>
                        </td>
                      </tr>`;
                    })}
                  </tbody>
                </table>`
          }
        </section>

        <section id="journal">
          <h2>Journal <small>newest first</small></h2>
          ${renderJournal(snapshot.journal)}
        </section>

        <section id="tokens">
          <h2>Issued access tokens</h2>
          <p>
            ${snapshot.tokens.count} remembered, ${snapshot.tokens.active} usable. Tokens are shown by the first 12 hex
            characters of their SHA-256, never themselves.
          </p>
          ${form('revoke', html`<button>Revoke all usable tokens</button>`)}
          ${
            snapshot.tokens.latest.length > 0 &&
            html`<table>
              <thead>
                <tr>
                  <th>sha-256</th>
                  <th>machineId</th>
                  <th>expires</th>
                  <th>state</th>
                  <th></th>
                </tr>
              </thead>
              <tbody>
                ${snapshot.tokens.latest.map(
                  (token) =>
                    html`<tr>
                      <td class="mono">${token.id}</td>
                      <td class="mono">${token.machineId}</td>
                      <td>${token.expiresAt}</td>
                      <td>${token.state}</td>
                      <td>
                        ${token.state === 'active' && form('revoke', html`<input type="hidden" name="token" value="${token.id}" /><button>Revoke</button>`)}
                      </td>
                    </tr>`,
                )}
              </tbody>
            </table>`
          }
        </section>

        <section id="counters">
          <h2>Counters</h2>
          <table class="fields">
            <tr>
              <th>exchanges</th>
              <td>
                ${Object.entries(snapshot.counters.exchanges)
                  .map(([name, value]) => `${name} ${value}`)
                  .join(' · ')}
              </td>
            </tr>
            <tr>
              <th>API calls</th>
              <td>
                ${Object.entries(snapshot.counters.apiCalls)
                  .flatMap(([name, value]) => (typeof value === 'number' ? [`${name} ${value}`] : []))
                  .join(' · ')}
              </td>
            </tr>
            <tr>
              <th>Idempotency-Key</th>
              <td>
                ${Object.entries(snapshot.counters.idempotency)
                  .map(([name, value]) => `${name} ${value}`)
                  .join(' · ')}
              </td>
            </tr>
          </table>
        </section>

        <section id="faults">
          <h2>Queued faults</h2>
          ${
            snapshot.faults.length === 0
              ? html`<p class="empty">None queued.</p>`
              : html`<ol>
                  ${snapshot.faults.map(
                    (fault) =>
                      html`<li class="mono">
                        ${fault.target}:
                        ${fault.kind}${fault.status !== undefined && ` ${fault.status}`}${fault.ms !== undefined && ` ${fault.ms} ms`}${fault.headerNames?.length ? ` headers ${fault.headerNames.join(', ')}` : ''}${fault.bodyLength ? ` body ${fault.bodyLength} characters` : ''}
                      </li>`,
                  )}
                </ol>`
          }
          ${form(
            'fault',
            html`<label
                >for
                <select name="target">
                  <option value="token">the token endpoint</option>
                  <option value="api">any other request</option>
                </select></label
              >
              <label
                >kind
                <select name="kind">
                  ${FAULT_KINDS.map((kind) => html`<option>${kind}</option>`)}
                </select></label
              >
              <label>status <input type="number" name="status" min="100" max="599" value="503" /></label>
              <label>Retry-After <input type="number" name="retryAfter" min="0" placeholder="seconds" /></label>
              <label>delay <input type="number" name="ms" min="0" value="1000" /> ms</label>
              <button>Queue fault</button>`,
            'stacked',
          )}
        </section>

        <section id="clock">
          <h2>Clock</h2>
          <p>Emulator time is the real clock plus an offset: positive runs the platform ahead of the client.</p>
          ${form('clock', html`<label>offset <input type="number" name="offsetSeconds" step="any" value="${emulator.clockOffsetMs / 1000}" /> s</label><button>Set offset</button>`)}
        </section>

        <section id="sign-in">
          <h2>User sign-in</h2>
          ${
            snapshot.signIn.length === 0
              ? html`<p class="empty">No user sign-in step recorded.</p>`
              : html`<ol class="steps">
                  ${[...snapshot.signIn].reverse().map((step) => html`<li>${renderGenericRecord(step)}</li>`)}
                </ol>`
          }
        </section>
      </main>
    </body>
  </html>`;
  return `<!DOCTYPE html>\n${page.value}\n`;
}
