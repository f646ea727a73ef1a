import { CLAIM_RULE_LABELS, CLAIM_RULE_ORDER, type ClaimRuleVerdict } from '../emulator/emulator.claim-rules.js';
import { html, type SafeHtml } from './inspector.html.js';
import type { TokenRequestRecord } from '../emulator/emulator.types.js';

/** Entries rendered on the page; `journal.json` has them all. */
const JOURNAL_SHOWN = 100;
const TIME_CLAIMS = new Set(['iat', 'nbf', 'exp']);
/** Field names that could hold a secret in a record of a flow this page does not know yet (user sign-in). */
const SECRET_NAME = /token|code|verifier|assertion|secret|password|pem|key|cookie|authorization/i;
const COMPACT_JWT = /^[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]*$/;

/** The journal, newest first: one `<details>` per exchange with its verdict, decoded header and claims, and rules. */
export function renderJournal(journal: readonly TokenRequestRecord[]): SafeHtml {
  if (journal.length === 0) return html`<p class="empty">No token request yet.</p>`;
  const shown = journal.slice(0, JOURNAL_SHOWN);
  const older = journal.length - shown.length;
  return html`${shown.map((record, index) => renderExchange(record, journal.length - index))}
  ${older > 0 && html`<p class="empty">${older} older entries are in journal.json.</p>`}`;
}

function renderExchange(record: TokenRequestRecord, number: number): SafeHtml {
  const at = new Date(record.at).toISOString();
  const jti = typeof record.claims?.jti === 'string' ? record.claims.jti : '';
  const outcome = record.fault ? `fault: ${record.fault}` : record.rule ? `${record.rule}` : 'token issued';
  return html`<details
    class="exchange ${record.verdict}"
    data-verdict="${record.verdict}"
    data-key="${at}|${jti}|${number}"
  >
    <summary>
      <span class="badge ${record.verdict}">${record.verdict}</span> <span class="mono">#${number}</span>
      <time datetime="${at}">${at}</time> <span>HTTP ${record.status || 'none'}</span>
      <span class="mono">${outcome}</span>
      ${record.errorDescription && html`<span class="why">${record.errorDescription}</span>`}
    </summary>
    <div class="exchange-body">
      <p class="request">
        ${field('method', record.method)} ${field('content-type', record.contentType)}
        ${field('grant_type', record.grantType)} ${field('client_id', record.clientId)}
        ${field('machineId', record.machineId)} ${field('error', record.error)}
      </p>
      ${
        record.header &&
        html`<h4>Header</h4>
          <pre>${JSON.stringify(record.header)}</pre>`
      }
      ${
        record.claims &&
        html`<h4>Claims</h4>
          ${renderClaims(record.claims, record.at)}`
      }
      ${
        record.rules
          ? html`<h4>Rules</h4>
              ${renderRules(record.rules, record.rule)}`
          : html`<p class="empty">${noRulesReason(record)}</p>`
      }
      ${renderExtraFields(record)}
    </div>
  </details>`;
}

function noRulesReason(record: TokenRequestRecord): string {
  if (record.verdict === 'fault') return 'An injected fault answered: the assertion rules were not applied.';
  if (record.grantType !== undefined && record.grantType !== 'clientcertificate' && record.verdict === 'accepted') {
    return 'A user sign-in grant: no client assertion to judge (its steps are under User sign-in).';
  }
  return 'Refused before the assertion could be judged; the rules were not applied.';
}

function field(name: string, value: string | undefined): SafeHtml {
  return html`${value !== undefined && html`<span><b>${name}</b> <code>${value}</code></span>`}`;
}

/** The decoded claims, times shown as dates and against the emulator clock when the request arrived. */
function renderClaims(claims: Record<string, unknown>, at: number): SafeHtml {
  return html`<table class="fields claims">
    ${Object.entries(claims).map(([name, value]) => {
      const time =
        TIME_CLAIMS.has(name) && typeof value === 'number' && Number.isFinite(value)
          ? ` ${new Date(value * 1000).toISOString()} (${signed(Math.round(value * 1000 - at) / 1000)} s vs clock at arrival)`
          : '';
      return html`<tr>
        <th>${name}</th>
        <td class="mono">${JSON.stringify(value)}${time}</td>
      </tr>`;
    })}
  </table>`;
}

function renderRules(rules: readonly ClaimRuleVerdict[], decisive: string | undefined): SafeHtml {
  const ordered = [...rules].sort((a, b) => CLAIM_RULE_ORDER.indexOf(a.rule) - CLAIM_RULE_ORDER.indexOf(b.rule));
  return html`<table class="rules">
    <thead>
      <tr>
        <th>rule</th>
        <th>verdict</th>
        <th>expected</th>
        <th>received</th>
        <th>Δ s</th>
        <th>why</th>
      </tr>
    </thead>
    <tbody>
      ${ordered.map(
        (rule) =>
          html`<tr
            class="${rule.outcome}${rule.rule === decisive ? ' decisive' : ''}"
            data-rule="${rule.rule}"
            data-outcome="${rule.outcome}"
          >
            <th class="mono">${CLAIM_RULE_LABELS[rule.rule]}</th>
            <td>${OUTCOME_TEXT[rule.outcome]}</td>
            <td class="mono">${rule.expected}</td>
            <td class="mono">${rule.received}</td>
            <td class="num">${rule.differenceSeconds !== undefined && signed(rule.differenceSeconds)}</td>
            <td>${rule.message}</td>
          </tr>`,
      )}
    </tbody>
  </table>`;
}

const OUTCOME_TEXT: Readonly<Record<ClaimRuleVerdict['outcome'], string>> = {
  ok: '✓ ok',
  failed: '✗ failed',
  'not-checked': '– not checked',
};

const KNOWN_FIELDS = new Set([
  'at',
  'method',
  'contentType',
  'grantType',
  'clientId',
  'header',
  'claims',
  'status',
  'verdict',
  'rule',
  'rules',
  'fault',
  'error',
  'errorDescription',
  'machineId',
]);

/** Fields this page does not know (added by later flows), shown as text unless they could hold a secret. */
function renderExtraFields(record: object): SafeHtml {
  const extra = Object.entries(record).filter(([name]) => !KNOWN_FIELDS.has(name));
  return extra.length === 0 ? html`` : renderGenericRecord(Object.fromEntries(extra));
}

/** A generic record (a user sign-in step), as a table of its fields with anything secret-looking withheld. */
export function renderGenericRecord(record: object): SafeHtml {
  return html`<table class="fields">
    ${Object.entries(record).map(
      ([name, value]) =>
        html`<tr>
          <th>${name}</th>
          <td class="mono">${safeValue(name, value)}</td>
        </tr>`,
    )}
  </table>`;
}

function safeValue(name: string, value: unknown): string {
  if (SECRET_NAME.test(name)) return '(withheld)';
  const text = typeof value === 'string' ? value : (JSON.stringify(value) ?? typeof value);
  if (COMPACT_JWT.test(text) || text.includes('-----BEGIN')) return '(withheld)';
  return text.length > 200 ? `${text.slice(0, 197)}...` : text;
}

function signed(seconds: number): string {
  return seconds > 0 ? `+${seconds}` : `${seconds}`;
}
