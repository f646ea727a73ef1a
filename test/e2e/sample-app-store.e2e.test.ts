import { randomBytes } from 'node:crypto';
import type { INestApplication } from '@nestjs/common';
import { Test } from '@nestjs/testing';
import request from 'supertest';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { PlatformEmulator } from 'nestjs-platform-auth/testing';
import { AppModule } from '../../sample-app/src/app.module.js';
import { useRedisServer } from '../support/redis-server.js';
import { restoreEnv } from '../support/environment.js';

const redis = useRedisServer();
let platform: PlatformEmulator;
const saved = { ...process.env };

beforeAll(async () => {
  platform = await PlatformEmulator.start();
  const integration = await platform.createIntegration({ name: 'sample-app fleet' });
  Object.assign(process.env, integration.env, {
    PLATFORM_TOKEN_STORE_URL: redis().url,
    PLATFORM_TOKEN_STORE_ENCRYPTION_KEY: randomBytes(32).toString('base64'),
  });
});
afterAll(async () => {
  restoreEnv(saved);
  await platform.close();
});

async function replica(): Promise<INestApplication> {
  const moduleRef = await Test.createTestingModule({ imports: [AppModule] }).compile();
  const app = moduleRef.createNestApplication({ logger: false });
  return app.init();
}

describe('the sample app with PLATFORM_TOKEN_STORE_URL set', () => {
  it('shares one token between its replicas through Redis', async () => {
    const replicas = [await replica(), await replica(), await replica()];
    try {
      for (const app of replicas) {
        await request(app.getHttpServer()).post('/messages').send({ to: 'alice', text: 'hi' }).expect(202);
      }
      expect(platform.counters.exchanges.total).toBe(1);
      expect(platform.counters.apiCalls.ok).toBe(3);
      expect(await redis().command('KEYS', 'platform-auth:{*}:token')).toHaveLength(1);
    } finally {
      await Promise.all(replicas.map((app) => app.close()));
    }
  });
});
