import 'reflect-metadata';
import { NestFactory } from '@nestjs/core';
import type { INestApplication } from '@nestjs/common';
import { AppModule } from './app.module.js';

/** Starts the sample app on `port` (0 = any free port), configured from the PLATFORM_* environment variables. */
export async function bootstrap(port = Number(process.env.PORT ?? 3000)): Promise<INestApplication> {
  const app = await NestFactory.create(AppModule, { logger: ['error', 'warn', 'log'] });
  await app.listen(port, '127.0.0.1');
  return app;
}
