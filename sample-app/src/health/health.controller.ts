import { Controller, Get } from '@nestjs/common';
import { HealthCheck, HealthCheckService, type HealthCheckResult } from '@nestjs/terminus';
import { PlatformAuthHealthIndicator } from 'nestjs-platform-auth/terminus';

@Controller('health')
export class HealthController {
  constructor(
    private readonly health: HealthCheckService,
    private readonly platform: PlatformAuthHealthIndicator,
  ) {}

  /**
   * Readiness: 503 when no platform token can be had (the last exchange failed) or the certificate has expired.
   * Active mode fetches a token only when none is cached, through the module's single flight. Never shows a token.
   */
  @Get()
  @HealthCheck()
  check(): Promise<HealthCheckResult> {
    return this.health.check([() => this.platform.isHealthy('platform', { mode: 'active' })]);
  }
}
