import { Body, Controller, HttpCode, NotFoundException, Param, Post } from '@nestjs/common';
import { PlatformTenants, UnknownTenantError, type PlatformTenant } from 'nestjs-platform-auth';
import { firstValueFrom } from 'rxjs';
import type { SendMessageInput } from '../messaging/messaging.service.js';

/** Sends a message as a customer organisation: the tenant's own integration, its own token. */
@Controller('tenants')
export class TenantsController {
  constructor(private readonly tenants: PlatformTenants) {}

  @Post(':tenantId/messages')
  @HttpCode(202)
  async send(@Param('tenantId') tenantId: string, @Body() body: SendMessageInput): Promise<unknown> {
    const tenant = await this.tenant(tenantId);
    const message = { to: String(body?.to ?? ''), text: String(body?.text ?? '') };
    return (await firstValueFrom(tenant.http.post('/api/messages', message))).data;
  }

  private async tenant(tenantId: string): Promise<PlatformTenant> {
    try {
      return await this.tenants.get(tenantId);
    } catch (error) {
      if (error instanceof UnknownTenantError) throw new NotFoundException(error.message);
      throw error;
    }
  }
}
