// The public API of `nestjs-platform-auth/user`; test/packaging locks this list.
export {
  InjectPlatformUserAuth,
  InjectPlatformUserSessions,
  PlatformUserAuthModule,
} from './platform-user-auth.module.js';
export type {
  PlatformUserAuthModuleAsyncOptions,
  PlatformUserAuthModuleExtras,
  PlatformUserAuthModuleOptions,
} from './platform-user-auth.module-definition.js';
export type { PlatformUserAuthOptions } from './platform-user-auth-options.interface.js';
export { PlatformUserAuth } from './platform-user-auth.service.js';
export type {
  AuthorizationRequest,
  AuthorizationRequestOptions,
  LogoutOptions,
  LogoutResult,
  UserTokens,
} from './platform-user-auth.types.js';
export type { UserClientAuthentication } from './platform-user-auth-options.interface.js';
export {
  PlatformUserSessions,
  readCookie,
  setCookies,
  type HeaderWritable,
  type UserSession,
} from './user-session.service.js';
export { PlatformUser, PlatformUserGuard } from './platform-user.guard.js';
export { platformUserAuthConfig } from './platform-user-auth.config.js';
export { USER_SESSION_COOKIE, USER_TRANSACTION_COOKIE } from './platform-user-auth.constants.js';
export { UserAuthError, isUserAuthError, type UserAuthErrorDetails, type UserAuthFailure } from './user-auth.errors.js';
// Types the classes above use, from the main entry point, so this one is complete on its own.
export type { Clock } from '../platform-auth.clock.js';
export type { KeySource, PlatformAuthSigner } from '../options/key-source.interface.js';
export { PlatformAuthError } from '../platform-auth.errors.js';
