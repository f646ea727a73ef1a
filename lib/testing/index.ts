export { createTestCredentials, type TestCredentials, type TestCredentialsOptions } from './test-credentials.util.js';
export { FakeClock } from './fake.clock.js';
export { PlatformEmulator } from './emulator/platform.emulator.js';
export type {
  EmulatedEnvironment,
  EmulatedIntegration,
  EmulatedModuleOptions,
  EmulatorCounters,
  EmulatorFault,
  FaultTarget,
  IntegrationPermission,
  PlatformEmulatorOptions,
  RegisteredIntegration,
  RegisterIntegrationInput,
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
