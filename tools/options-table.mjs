#!/usr/bin/env node
// Writes the options table of docs/configuration.md from lib/options/options.table.ts (through the build), between
// <!-- options-table --> and <!-- /options-table -->, then formats the file. test/architecture checks they agree.
//   npm run build && node tools/options-table.mjs
import { execFileSync } from 'node:child_process';
import { readFileSync, writeFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';

const root = fileURLToPath(new URL('..', import.meta.url));
const doc = `${root}docs/configuration.md`;
const { OPTION_TABLE_NAMES, optionTableCells } = await import(`${root}dist/options/options.table.js`);

const header = ['option', 'environment variable', 'default', 'rule'];
const rows = [header, header.map(() => '---'), ...OPTION_TABLE_NAMES.map((name) => optionTableCells(name))];
const table = rows.map((cells) => `| ${cells.map((cell) => cell.replaceAll('|', '\\|')).join(' | ')} |`).join('\n');
const text = readFileSync(doc, 'utf8');
const block = /(<!-- options-table -->\n)[\s\S]*?(<!-- \/options-table -->)/;
if (!block.test(text)) throw new Error('docs/configuration.md has no <!-- options-table --> block');
writeFileSync(doc, text.replace(block, `$1\n${table}\n\n$2`));
execFileSync(process.execPath, [
  `${root}node_modules/prettier/bin/prettier.cjs`,
  '--write',
  '--log-level',
  'warn',
  doc,
]);
console.log(`options-table: ${OPTION_TABLE_NAMES.length} options written to docs/configuration.md`);
