import { Controller, Get } from '@nestjs/common';
import { InjectPlatformHttpService, PlatformHttpService } from 'nestjs-platform-auth';
import { firstValueFrom } from 'rxjs';

/**
 * Billing data through its own system integration, `billing` (PLATFORM_BILLING_* variables), which holds only the
 * "Retrieve billing data" permission: least privilege, one integration per permission set. The path is the
 * emulator's placeholder; the real billing path is not published.
 */
@Controller('billing')
export class BillingController {
  constructor(
    @InjectPlatformHttpService('billing') private readonly billing: PlatformHttpService,
    private readonly messaging: PlatformHttpService,
  ) {}

  @Get()
  async read(): Promise<unknown> {
    return (await firstValueFrom(this.billing.get('/api/billing'))).data;
  }

  /** The same call through the messaging integration, to show what least privilege looks like: the platform's 403. */
  @Get('with-messaging-integration')
  async readWithTheWrongIntegration(): Promise<{ platformStatus: number }> {
    const response = await firstValueFrom(this.messaging.get('/api/billing', { validateStatus: () => true }));
    return { platformStatus: response.status };
  }
}
