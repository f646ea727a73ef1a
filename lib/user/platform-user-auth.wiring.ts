import type { Clock } from '../platform-auth.clock.js';
import { PlatformUserAuth } from './platform-user-auth.service.js';
import type { ResolvedUserAuthConfig } from './user-options.resolver.js';
import { EndedSessions } from './user-session.ended.js';
import { PlatformUserSessions } from './user-session.service.js';

/**
 * User sign-in's composition root, as `PlatformAuthRuntime` is the machine integration's: everything one sign-in
 * configuration is made of, built once, in order. The module's providers take the services from it.
 */
export class PlatformUserAuthRuntime {
  readonly auth: PlatformUserAuth;
  readonly sessions: PlatformUserSessions;

  constructor(config: ResolvedUserAuthConfig, clock: Clock) {
    // One record of ended sessions for both: a logout through one is seen by the other's session checks.
    const ended = new EndedSessions(clock);
    this.auth = new PlatformUserAuth(config, clock, ended);
    this.sessions = new PlatformUserSessions(config, clock, ended);
  }
}
