import { Module } from '@nestjs/common';
import { TerminusModule } from '@nestjs/terminus';
import { PlatformAuthHealthIndicator } from 'nestjs-platform-auth/terminus';
import { HealthController } from './health.controller.js';

@Module({
  imports: [TerminusModule],
  controllers: [HealthController],
  providers: [PlatformAuthHealthIndicator],
})
export class HealthModule {}
