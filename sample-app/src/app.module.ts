import { Module } from '@nestjs/common';
import { ConditionalModule, ConfigModule } from '@nestjs/config';
import { PlatformAuthModule, platformAuthConfig } from 'nestjs-platform-auth';
import { BillingModule } from './billing/billing.module.js';
import { HealthModule } from './health/health.module.js';
import { MessagingModule } from './messaging/messaging.module.js';
import { TenantsModule } from './tenants/tenants.module.js';
import { UserModule } from './user/user.module.js';

/**
 * The reference integration: configuration from the environment (PLATFORM_* variables), the platform module set
 * up in one line, and feature modules that inject its authenticated HttpService. Billing (`/billing`) uses a second,
 * named integration when PLATFORM_BILLING_* is set; user sign-in (`/login`, `/me`) is there when
 * PLATFORM_USER_CLIENT_ID is set. Sending as a customer organisation (`/tenants/:tenantId/messages`) is there when
 * SAMPLE_APP_TENANTS lists tenants.
 * With PLATFORM_TOKEN_STORE_URL and PLATFORM_TOKEN_STORE_ENCRYPTION_KEY set, its replicas share one token through
 * Redis; nothing else changes.
 */
@Module({
  imports: [
    ConfigModule.forRoot({ isGlobal: true }),
    PlatformAuthModule.forRootAsync({ ...platformAuthConfig.asProvider(), isGlobal: true }),
    MessagingModule,
    // Billing through a second, named integration when PLATFORM_BILLING_MACHINE_ID is set.
    ConditionalModule.registerWhen(BillingModule, (env) => Boolean(env.PLATFORM_BILLING_MACHINE_ID?.trim()), {
      debug: false,
    }),
    HealthModule,
    // One integration per customer organisation, when SAMPLE_APP_TENANTS lists them.
    ConditionalModule.registerWhen(TenantsModule, (env) => Boolean(env.SAMPLE_APP_TENANTS?.trim()), { debug: false }),
    // A function, not the variable's name: with a name, ConditionalModule treats an unset variable as true.
    ConditionalModule.registerWhen(UserModule, (env) => Boolean(env.PLATFORM_USER_CLIENT_ID?.trim()), {
      debug: false,
    }),
  ],
})
export class AppModule {}
