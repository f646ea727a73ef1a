import { PlatformAuthConfigError } from '../platform-auth.errors.js';

/** The integration of `forRoot(options)` without a `name`: injected by class, as before named integrations. */
export const DEFAULT_INTEGRATION = 'default';

/** Lower-case letters, digits and `-`/`_`, starting with a letter: it becomes part of environment variable names. */
const INTEGRATION_NAME = /^[a-z][a-z0-9_-]{0,39}$/;

/** `name` checked and normalised; `undefined` and `'default'` are the default integration. */
export function integrationName(name: unknown): string {
  if (name === undefined || name === DEFAULT_INTEGRATION) return DEFAULT_INTEGRATION;
  if (typeof name !== 'string' || !INTEGRATION_NAME.test(name)) {
    const problem = `must be lower-case letters, digits, '-' or '_', starting with a letter (at most 40), got ${
      typeof name === 'string' && name.length <= 40 && !/[\r\n]/.test(name) ? `'${name}'` : `a ${typeof name}`
    }`;
    throw new PlatformAuthConfigError([{ option: 'name', setting: 'name', message: problem }]);
  }
  return name;
}

/**
 * The environment variable of `variable` (a `PLATFORM_…` name) for an integration: `PLATFORM_BASE_URL` becomes
 * `PLATFORM_BILLING_BASE_URL` for `billing`; the default integration keeps the plain names.
 */
export function integrationEnvName(variable: string, integration: string = DEFAULT_INTEGRATION): string {
  if (integration === DEFAULT_INTEGRATION) return variable;
  return variable.replace(/^PLATFORM_/, `PLATFORM_${integration.toUpperCase().replace(/-/g, '_')}_`);
}
