import { randomBytes } from 'node:crypto';
import { PlatformEmulator } from 'nestjs-platform-auth/testing';

export const SAMPLE_USER_CLIENT_ID = 'sample-app';

/**
 * The embedded platform for a fresh clone: an emulator with a new system integration and, when the app's port is
 * known, a user client whose redirect URI is the app's `/callback`. Fills `process.env` as a real deployment would.
 */
export async function startEmbeddedPlatform(
  appPort?: number,
  log: (line: string) => void = console.log,
): Promise<PlatformEmulator> {
  const emulator = await PlatformEmulator.start();
  const integration = await emulator.createIntegration({ name: 'sample-app' });
  Object.assign(process.env, integration.env);
  log(
    `Embedded platform emulator on ${emulator.url} (integration ${integration.machineId}, thumbprint ${integration.thumbprint}).`,
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
