import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { PLATFORM_AUTH_OPTIONS, optionTableCells, type OptionTable } from '../../lib/options/options.table.js';
import { PLATFORM_USER_AUTH_OPTIONS } from '../../lib/options/options.table.user.js';

const docs = {
  configuration: readFileSync(new URL('../../docs/configuration.md', import.meta.url), 'utf8'),
};

/** The rows of a documented options table, each as its trimmed cells (the header and the rule line left out). */
function documentedRows(marker: string, doc: string = docs.configuration): string[][] {
  const block = new RegExp(`<!-- ${marker} -->([\\s\\S]*?)<!-- /${marker} -->`).exec(doc)?.[1] ?? '';
  return block
    .split('\n')
    .filter((line) => line.startsWith('|'))
    .slice(2)
    .map((line) =>
      line
        .slice(1, -1)
        .split(/(?<!\\)\|/)
        .map((cell) => cell.trim().replaceAll('\\|', '|')),
    );
}

describe('the options tables of docs/configuration.md', () => {
  it.each<[string, string, OptionTable, number]>([
    ['machine authentication', 'options-table', PLATFORM_AUTH_OPTIONS, 30],
    ['user sign-in', 'user-options-table', PLATFORM_USER_AUTH_OPTIONS, 20],
  ])('%s: the option table of the code, row for row (option, variable, default, rule)', (_, marker, table, least) => {
    const expected = Object.keys(table).map((name) => optionTableCells(name, table));
    expect(expected.length).toBeGreaterThan(least);
    expect(documentedRows(marker)).toEqual(expected);
  });
});
