import { fileURLToPath } from 'node:url';
import { defineConfig } from 'vitest/config';

export default defineConfig({
  // Nest's dependency injection reads constructor parameter types from decorator metadata.
  oxc: {
    decorator: { legacy: true, emitDecoratorMetadata: true },
  },
  resolve: {
    alias: [
      {
        find: /^nestjs-platform-auth\/terminus$/,
        replacement: fileURLToPath(new URL('./lib/terminus/index.ts', import.meta.url)),
      },
      {
        find: /^nestjs-platform-auth\/testing$/,
        replacement: fileURLToPath(new URL('./lib/testing/index.ts', import.meta.url)),
      },
      {
        find: /^nestjs-platform-auth\/user$/,
        replacement: fileURLToPath(new URL('./lib/user/index.ts', import.meta.url)),
      },
      { find: /^nestjs-platform-auth$/, replacement: fileURLToPath(new URL('./lib/index.ts', import.meta.url)) },
    ],
  },
  test: {
    include: ['test/**/*.test.ts'],
    setupFiles: ['reflect-metadata'],
    // dist/ and the sample app, built once before any test file; tests that run them in other processes rely on it.
    globalSetup: ['test/support/build-once.global-setup.ts'],
    pool: 'forks',
    // Hang guards only: tests wait for conditions, never for a time, so a slow machine takes longer but passes.
    testTimeout: 300_000,
    hookTimeout: 300_000,
  },
});
