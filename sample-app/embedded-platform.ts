import { randomBytes } from 'node:crypto';
import { PlatformEmulator } from 'nestjs-platform-auth/testing';

export const SAMPLE_USER_CLIENT_ID = 'sample-app';
/** The customer organisations the embedded platform registers, each an integration of its own. */
export const SAMPLE_TENANTS = ['acme', 'globex'] as const;

/**
 * The embedded platform for a fresh clone: an emulator with a new system integration and, when the app's port is
 * known, a user client whose redirect URI is the app's `/callback`. Fills `process.env` as a real deployment would.
 */
export async function startEmbeddedPlatform(
  appPort?: number,
  log: (line: string) => void = console.log,
): Promise<PlatformEmulator> {
  const emulator = await PlatformEmulator.start();
  // Least privilege: one integration per permission set, messages through the default one, billing through `billing`.
  const integration = await emulator.createIntegration({ name: 'sample-app', permissions: ['Send message'] });
  const billing = await emulator.createIntegration({
    name: 'sample-app billing',
    permissions: ['Retrieve billing data'],
  });
  Object.assign(process.env, integration.env, namedEnv('BILLING', billing.env));
  // Two customer organisations, each with an integration of its own, for the tenant registry (`forTenants`).
  const tenants: string[] = [];
  for (const tenantId of SAMPLE_TENANTS) {
    const tenant = await emulator.createIntegration({
      name: `sample-app tenant ${tenantId}`,
      permissions: ['Send message'],
    });
    Object.assign(process.env, namedEnv(`TENANT_${tenantId.toUpperCase()}`, tenant.env));
    tenants.push(`${tenantId} ${tenant.machineId}`);
  }
  process.env.SAMPLE_APP_TENANTS = SAMPLE_TENANTS.join(',');
  log(
    `Embedded platform emulator on ${emulator.url} (integrations: messaging ${integration.machineId}, billing ${billing.machineId}; tenants ${tenants.join(', ')}).`,
  );
  if (appPort !== undefined) {
    const redirectUri = `http://127.0.0.1:${appPort}/callback`;
    emulator.registerUserClient({ clientId: SAMPLE_USER_CLIENT_ID, redirectUris: [redirectUri], name: 'Sample app' });
    Object.assign(process.env, {
      PLATFORM_USER_CLIENT_ID: SAMPLE_USER_CLIENT_ID,
      PLATFORM_USER_REDIRECT_URI: redirectUri,
      PLATFORM_USER_SCOPE: 'profile',
      PLATFORM_USER_STATE_SECRET: process.env.PLATFORM_USER_STATE_SECRET ?? randomBytes(32).toString('base64url'),
    });
  }
  return emulator;
}

/** `PLATFORM_BASE_URL` → `PLATFORM_BILLING_BASE_URL`, … : the variables of a named integration. */
function namedEnv(name: string, env: Readonly<Record<string, string | undefined>>): Record<string, string | undefined> {
  return Object.fromEntries(
    Object.entries(env).map(([key, value]) => [key.replace(/^PLATFORM_/, `PLATFORM_${name}_`), value]),
  );
}
