import { execFile } from 'node:child_process';
import { mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { transformSync } from 'esbuild';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { TELEMETRY_ATTRIBUTES as ATTR, TELEMETRY_NAMES as NAMES } from '../../lib/telemetry/telemetry.events.js';
import { blockContaining, repositoryRoot } from '../support/docs-blocks.js';

/**
 * The SDK set-up of docs/operations.md, run as an app would run it: in a process of its own (instrumentation has to
 * load before `http`), against the built package, with the module making one authenticated call to the emulator.
 */
const SETUPS = [
  { system: 'CommonJS', needle: 'of a CommonJS app', ext: 'cjs', format: 'cjs', node: ['main.cjs'] },
  {
    system: 'ES module',
    needle: 'of an ES module app',
    ext: 'mjs',
    format: 'esm',
    node: ['--import', './instrumentation.mjs', 'main.mjs'],
  },
] as const;

/**
 * The app: the console exporters' `console.dir` becomes one JSON line per span or metric, which this test reads;
 * everything else is what main.ts does.
 */
function mainOf(ext: 'cjs' | 'mjs'): string {
  const load = (name: string) => (ext === 'cjs' ? `require('${name}')` : `await import('${name}')`);
  return `
console.dir = (item) => process.stdout.write(\`TELEMETRY \${JSON.stringify(item)}\\n\`);
const { shutdownTelemetry } = ${load('./instrumentation.' + ext)};
const { NestFactory } = ${load('@nestjs/core')};
const { firstValueFrom } = ${load('rxjs')};
const { PlatformAuthModule, PlatformHttpService } = ${load('nestjs-platform-auth')};
const { PlatformEmulator } = ${load('nestjs-platform-auth/testing')};
${ext === 'cjs' ? '(async () => {' : ''}
const platform = await PlatformEmulator.start();
const integration = await platform.createIntegration();
const app = await NestFactory.createApplicationContext(PlatformAuthModule.forRoot(integration.moduleOptions), {
  logger: false,
});
const response = await firstValueFrom(app.get(PlatformHttpService).get('/api/billing'));
await app.close();
await platform.close();
await shutdownTelemetry();
process.stdout.write(\`STATUS \${response.status}\\n\`);
${ext === 'cjs' ? '})();' : ''}
`;
}

interface ExportedSpan {
  name: string;
  id: string;
  kind: number;
  parentSpanContext?: { spanId: string };
  attributes: Record<string, unknown>;
  instrumentationScope: { name: string; version?: string };
}

interface ExportedMetric {
  descriptor: { name: string };
  dataPoints: { attributes: Record<string, unknown> }[];
}

/** A node_modules where the repository's packages and the built package itself resolve as in an app. */
function appDirectory(): string {
  const dir = mkdtempSync(join(tmpdir(), 'telemetry-setup-'));
  const modules = join(dir, 'node_modules');
  mkdirSync(modules);
  for (const entry of readdirSync(join(repositoryRoot, 'node_modules'))) {
    if (!entry.startsWith('.')) symlinkSync(join(repositoryRoot, 'node_modules', entry), join(modules, entry));
  }
  symlinkSync(repositoryRoot, join(modules, 'nestjs-platform-auth'));
  return dir;
}

function runNode(args: readonly string[], cwd: string): Promise<{ code: number; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    execFile(process.execPath, [...args], { cwd, encoding: 'utf8', timeout: 120_000 }, (error, stdout, stderr) =>
      resolve({ code: error ? (typeof error.code === 'number' ? error.code : -1) : 0, stdout, stderr }),
    );
  });
}

let dir: string;
beforeAll(() => {
  dir = appDirectory();
});
afterAll(() => rmSync(dir, { recursive: true, force: true }));

describe('the OpenTelemetry SDK set-up of docs/operations.md', () => {
  const { version } = JSON.parse(readFileSync(join(repositoryRoot, 'package.json'), 'utf8')) as { version: string };

  it.each(SETUPS)(
    '$system app: the exchange span, versioned and named, with the HTTP client span of the token request inside',
    async ({ needle, ext, format, node }) => {
      const block = blockContaining('docs/operations.md', needle);
      const { code } = transformSync(block.code, { loader: 'ts', format, target: 'node20' });
      writeFileSync(join(dir, `instrumentation.${ext}`), code);
      writeFileSync(join(dir, `main.${ext}`), mainOf(ext));

      const run = await runNode(node, dir);
      expect(run.code, run.stderr).toBe(0);
      expect(run.stdout).toContain('STATUS 200');
      const exported = run.stdout
        .split('\n')
        .filter((line) => line.startsWith('TELEMETRY '))
        .map((line) => JSON.parse(line.slice('TELEMETRY '.length)) as Partial<ExportedSpan & ExportedMetric>);
      const spans = exported.filter((item): item is ExportedSpan => typeof item.name === 'string');
      const exchange = spans.find((span) => span.name === NAMES.exchangeSpan);
      expect(exchange?.instrumentationScope).toMatchObject({ name: NAMES.meter, version });
      expect(exchange?.attributes).toMatchObject({ [ATTR.integrationName]: 'default', [ATTR.outcome]: 'success' });
      // The HTTP instrumentation saw the token request, as a child of the exchange.
      const client = spans.filter((span) => span.kind === 2 && span.parentSpanContext?.spanId === exchange?.id);
      expect(client.map((span) => span.attributes['http.request.method'] ?? span.attributes['http.method'])).toEqual([
        'POST',
      ]);
      const metrics = exported.filter((item): item is ExportedMetric => item.descriptor !== undefined);
      const exchanges = metrics.find((metric) => metric.descriptor.name === NAMES.exchanges);
      expect(exchanges?.dataPoints.map((point) => point.attributes[ATTR.integrationName])).toEqual(['default']);
    },
    180_000,
  );
});
