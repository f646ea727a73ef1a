import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { OPTION_TABLE_NAMES, optionTableCells } from '../../lib/options/options.table.js';

const doc = readFileSync(new URL('../../docs/configuration.md', import.meta.url), 'utf8');

/** The rows of the documented options table, each as its trimmed cells (the header and the rule line left out). */
function documentedRows(): string[][] {
  const block = /<!-- options-table -->([\s\S]*?)<!-- \/options-table -->/.exec(doc)?.[1] ?? '';
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

describe('the options table of docs/configuration.md', () => {
  it('is the option table of the code, row for row: every option, its variable, default and rule', () => {
    const expected = OPTION_TABLE_NAMES.map((name) => optionTableCells(name));
    expect(expected.length).toBeGreaterThan(30);
    expect(documentedRows()).toEqual(expected);
  });
});
