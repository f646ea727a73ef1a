export { createTestCredentials, type TestCredentials, type TestCredentialsOptions } from './test-credentials.util.js';
export {
  createTestCertificates,
  type TestCertificates,
  type TestCertificatesOptions,
} from './test-certificates.util.js';
export type { SelfSignedCredentials, SelfSignedCredentialsOptions } from './self-signed-credentials.util.js';
export { FakeClock } from './fake.clock.js';
export { PlatformEmulator } from './emulator/platform.emulator.js';
export type {
  EmulatedEnvironment,
  EmulatedIntegration,
  EmulatedModuleOptions,
  EmulatorCounters,
  EmulatorFault,
  EmulatorRateLimit,
  FaultTarget,
  IntegrationPermission,
  PlatformEmulatorOptions,
  RegisteredIntegration,
  RegisterIntegrationInput,
  ThumbprintAlgorithm,
  TokenRequestRecord,
  TokenRequestRule,
} from './emulator/emulator.types.js';
export type {
  RegisteredUserClient,
  RegisterUserClientInput,
  TestUser,
  UserFlowRecord,
  UserFlowStep,
} from './user-flow/user-flow.types.js';
export type { ClaimRuleId, ClaimRuleOutcome, ClaimRuleVerdict } from './emulator/emulator.claim-rules.js';
// Types the classes above use, from the main entry point, so this one is complete on its own.
export type { Clock } from '../platform-auth.clock.js';
