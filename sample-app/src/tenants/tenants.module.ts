import { Module } from '@nestjs/common';
import { PlatformAuthModule, platformAuthConfig, type PlatformAuthOptions } from 'nestjs-platform-auth';
import { TenantsController } from './tenants.controller.js';

/**
 * A tenant's settings, for the tenants SAMPLE_APP_TENANTS lists (`acme,globex`): its PLATFORM_TENANT_<ID>_* variables,
 * read as a named integration's are. A real application looks its customers up in its own database or secret
 * manager here; nothing else changes.
 */
function tenantFromEnvironment(tenantId: string): Promise<PlatformAuthOptions | undefined> {
  const listed = (process.env.SAMPLE_APP_TENANTS ?? '').split(',').map((id) => id.trim());
  if (!listed.includes(tenantId)) return Promise.resolve(undefined);
  return Promise.resolve(platformAuthConfig.forIntegration(`tenant-${tenantId}`)());
}

/** One system integration per customer organisation, each resolved on first use (`forTenants`). */
@Module({
  imports: [PlatformAuthModule.forTenants({ resolve: tenantFromEnvironment })],
  controllers: [TenantsController],
})
export class TenantsModule {}
