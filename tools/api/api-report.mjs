#!/usr/bin/env node
// Locks the public API: for every entry point in package.json `exports`, API Extractor reads the built declaration
// files and writes a report of every exported name, type and member signature to api/<entry>.api.md.
//   node tools/api/api-report.mjs           check: fail when a report differs from what is checked in
//   node tools/api/api-report.mjs --update  rewrite the reports (then review the diff and commit it)
// A type a public signature uses must be exported by that entry point (ae-forgotten-export is an error): the report's
// exported names are then the whole surface a reader holds. An `@internal` one (stripped from the declarations) fails
// too: API Extractor cannot follow it. Needs `npm run build` first.
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { CompilerState, Extractor, ExtractorConfig } from '@microsoft/api-extractor';

const root = fileURLToPath(new URL('../..', import.meta.url));
const update = process.argv.includes('--update');
const packageJson = JSON.parse(readFileSync(join(root, 'package.json'), 'utf8'));
const reportFolder = join(root, 'api');
const scratch = mkdtempSync(join(tmpdir(), 'platform-auth-api-'));
mkdirSync(reportFolder, { recursive: true });

/** The declaration file of an `exports` entry: its `types`, or the `import` condition's `types`. */
function typesOf(target) {
  if (typeof target !== 'object' || target === null) return undefined;
  if (typeof target.types === 'string') return target.types;
  return typesOf(target.import);
}

const failures = [];
const entries = [];
for (const [subpath, target] of Object.entries(packageJson.exports)) {
  const types = typesOf(target);
  if (!types) continue;
  const name = subpath === '.' ? packageJson.name : `${packageJson.name}-${subpath.slice(2).replaceAll('/', '-')}`;
  const entry = join(root, types);
  if (!existsSync(entry)) {
    failures.push(`${subpath}: ${types} is missing; run npm run build first`);
    continue;
  }
  const config = ExtractorConfig.prepare({
    configObjectFullPath: join(root, 'api', 'api-extractor.json'),
    packageJsonFullPath: join(root, 'package.json'),
    configObject: {
      projectFolder: root,
      mainEntryPointFilePath: entry,
      bundledPackages: [],
      compiler: {
        overrideTsconfig: {
          compilerOptions: {
            target: 'es2022',
            lib: ['es2023'],
            module: 'nodenext',
            moduleResolution: 'nodenext',
            types: ['node'],
            strict: true,
            skipLibCheck: true,
          },
          files: [entry],
        },
      },
      apiReport: {
        enabled: true,
        reportFolder,
        reportTempFolder: scratch,
        reportFileName: `${name}.api.md`,
        // Were a type left unexported, its declaration would still be in the report, beside the error that fails it.
        includeForgottenExports: true,
      },
      docModel: { enabled: false },
      dtsRollup: { enabled: false },
      tsdocMetadata: { enabled: false },
      messages: {
        compilerMessageReporting: { default: { logLevel: 'error' } },
        extractorMessageReporting: {
          default: { logLevel: 'warning', addToApiReportFile: false },
          // Every type a public signature uses is one the entry point exports: a user can name what they must hold.
          'ae-forgotten-export': { logLevel: 'error', addToApiReportFile: false },
          'ae-missing-release-tag': { logLevel: 'none' },
          'ae-undocumented': { logLevel: 'none' },
          'ae-internal-missing-underscore': { logLevel: 'none' },
        },
        tsdocMessageReporting: { default: { logLevel: 'none' } },
      },
    },
  });
  entries.push({ subpath, name, config });
}

// One TypeScript program for every entry point: building it is most of API Extractor's work, once instead of once per
// entry.
const compilerState =
  entries.length === 0
    ? undefined
    : CompilerState.create(entries[0].config, {
        additionalEntryPoints: entries.map(({ config }) => config.mainEntryPointFilePath),
      });
for (const { subpath, name, config } of entries) {
  const messages = [];
  const result = Extractor.invoke(config, {
    compilerState,
    localBuild: update,
    messageCallback: (message) => {
      const reported = message.logLevel === 'error' || message.logLevel === 'warning';
      // The console-* messages say what happened to the report file; a changed report is judged below.
      if (reported && !message.messageId.startsWith('console-')) messages.push(message.formatMessageWithLocation(root));
      message.handled = true;
    },
  });
  if (result.apiReportChanged && !update) {
    failures.push(
      `${subpath}: the public API differs from api/${name}.api.md; if the change is meant, run node tools/api/api-report.mjs --update and review the diff`,
    );
  }
  for (const message of messages) failures.push(`${subpath}: ${message}`);
  if (!result.succeeded && messages.length === 0 && !result.apiReportChanged) failures.push(`${subpath}: API Extractor failed`);
}
rmSync(scratch, { recursive: true, force: true });
if (failures.length > 0) {
  console.error(`api-report: ${failures.length} problem(s):\n  - ${failures.join('\n  - ')}`);
  process.exit(1);
}
console.log(`api-report: ${update ? 'reports written' : 'public API matches'} (api/*.api.md)`);
