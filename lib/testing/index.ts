export { createTestCredentials, type TestCredentials, type TestCredentialsOptions } from './test-credentials.js';
export { FakeClock } from './fake-clock.js';
