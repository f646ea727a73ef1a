import type { INestApplicationContext } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import { PlatformAuthModule, type PlatformAuthOptions } from 'nestjs-platform-auth';
import { PlatformEmulator, type EmulatedIntegration } from 'nestjs-platform-auth/testing';

/** An emulator with one registered integration, and a way to start as many independent apps on it as needed. */
export class BenchPlatform {
  private constructor(
    readonly emulator: PlatformEmulator,
    readonly integration: EmulatedIntegration,
  ) {}

  static async start(): Promise<BenchPlatform> {
    // Long-lived tokens: no scheduled renewal may land inside a measured block.
    const emulator = await PlatformEmulator.start({ tokenLifetimeSeconds: 3600 });
    return new BenchPlatform(emulator, await emulator.createIntegration({ name: 'bench' }));
  }

  /**
   * A Nest application context holding a fresh `PlatformAuthModule.forRoot` (its own token cache and sockets), cold:
   * the scenarios time and count first calls, which a token acquired at boot would turn into cache hits.
   */
  createApp(options: Partial<PlatformAuthOptions> = {}): Promise<INestApplicationContext> {
    return NestFactory.createApplicationContext(
      PlatformAuthModule.forRoot({ ...this.integration.moduleOptions, startupCheck: 'off', ...options }),
      { logger: ['error'] },
    );
  }

  close(): Promise<void> {
    return this.emulator.close();
  }
}
