import { Module } from '@nestjs/common';
import { PlatformAuthModule, platformAuthConfig } from 'nestjs-platform-auth';
import { BillingController } from './billing.controller.js';

/** The named integration `billing`, configured from PLATFORM_BILLING_BASE_URL, PLATFORM_BILLING_MACHINE_ID, … */
@Module({
  imports: [
    PlatformAuthModule.forRootAsync({ name: 'billing', ...platformAuthConfig.forIntegration('billing').asProvider() }),
  ],
  controllers: [BillingController],
})
export class BillingModule {}
