import { Controller, Get } from '@nestjs/common';
import { TokenProvider } from 'nestjs-platform-auth';

@Controller('health')
export class HealthController {
  constructor(private readonly tokens: TokenProvider) {}

  /** Up when a platform token can be had; never shows the token. */
  @Get()
  async health(): Promise<{ status: 'ok'; tokenExpiresAt: string }> {
    const token = await this.tokens.getToken();
    return { status: 'ok', tokenExpiresAt: token.expiresAt.toISOString() };
  }
}
