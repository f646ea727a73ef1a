import {
  createSelfSignedCredentials,
  type SelfSignedCredentials,
  type SelfSignedCredentialsOptions,
} from './self-signed-credentials.util.js';

export type TestCredentialsOptions = SelfSignedCredentialsOptions;
export type TestCredentials = SelfSignedCredentials;

/** A throwaway RSA-2048 key and self-signed certificate, in memory, for tests. Never register these anywhere real. */
export function createTestCredentials(options: TestCredentialsOptions = {}): Promise<TestCredentials> {
  return createSelfSignedCredentials({ commonName: 'nestjs-platform-auth test integration', ...options });
}
