import { execFileSync } from 'node:child_process';
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { PrismaClientLike } from '../../lib/outbox/postgres/prisma.executor.js';

const root = fileURLToPath(new URL('../..', import.meta.url));
/**
 * Inside the project, so that Vitest compiles the TypeScript Prisma generates; in a folder named dist, which git,
 * ESLint and Prettier leave alone as they do every build output.
 */
const folder = join(root, 'test-artifacts', 'prisma-outbox', 'dist');

/** The application's schema: raw statements only, so no model is needed; the client is what Prisma 7 generates. */
const SCHEMA = `generator client {
  provider = "prisma-client"
  output   = "./client"
}

datasource db {
  provider = "postgresql"
}
`;

/**
 * Generates a Prisma 7 client (into test-artifacts/) and opens it on `url` through
 * `@prisma/adapter-pg`. Offline: `prisma generate` reads the schema with the engine compiled to WebAssembly that the
 * package ships; its check that a schema engine binary exists, which would download one, is given a file that
 * exists (the schema engine is for migrations, which this does not run).
 */
export async function openPrismaClient(url: string): Promise<PrismaClientLike & { $disconnect(): Promise<void> }> {
  mkdirSync(folder, { recursive: true });
  writeFileSync(join(folder, 'schema.prisma'), SCHEMA);
  execFileSync(
    process.execPath,
    [join(root, 'node_modules/prisma/build/index.js'), 'generate', '--schema', 'schema.prisma'],
    {
      cwd: folder,
      stdio: 'pipe',
      env: {
        ...process.env,
        CHECKPOINT_DISABLE: '1',
        PRISMA_HIDE_UPDATE_MESSAGE: '1',
        PRISMA_SCHEMA_ENGINE_BINARY: '/bin/false',
      },
    },
  );
  const clientPath = join(folder, 'client', 'client.ts');
  const { PrismaClient } = (await import(/* @vite-ignore */ clientPath)) as {
    PrismaClient: new (options: { adapter: unknown }) => PrismaClientLike & { $disconnect(): Promise<void> };
  };
  const { PrismaPg } = await import('@prisma/adapter-pg');
  return new PrismaClient({ adapter: new PrismaPg({ connectionString: url }) });
}
