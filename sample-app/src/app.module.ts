import { Module } from '@nestjs/common';
import { ConfigModule } from '@nestjs/config';
import { PlatformAuthModule, platformAuthConfig } from 'nestjs-platform-auth';
import { HealthModule } from './health/health.module.js';
import { MessagingModule } from './messaging/messaging.module.js';

/**
 * The reference integration: configuration from the environment (PLATFORM_* variables), the platform module set
 * up in one line, and feature modules that inject its authenticated HttpService.
 */
@Module({
  imports: [
    ConfigModule.forRoot({ isGlobal: true }),
    PlatformAuthModule.forRootAsync({ ...platformAuthConfig.asProvider(), isGlobal: true }),
    MessagingModule,
    HealthModule,
  ],
})
export class AppModule {}
