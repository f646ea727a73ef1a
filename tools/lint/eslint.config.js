// Run from the repository root: `npm run lint`. Type-checked rules read ../../tsconfig.json.
import { fileURLToPath } from 'node:url';
import js from '@eslint/js';
import globals from 'globals';
import tseslint from 'typescript-eslint';

const root = fileURLToPath(new URL('../..', import.meta.url));

export default tseslint.config(
  {
    basePath: root,
    ignores: [
      '**/dist/**',
      '**/node_modules/**',
      'bench/results/**',
      'coverage/**',
      'tools/**',
      'test/fixtures/apps/**',
    ],
  },
  {
    basePath: root,
    files: ['**/*.ts'],
    extends: [js.configs.recommended, ...tseslint.configs.recommendedTypeChecked],
    languageOptions: {
      globals: globals.node,
      parserOptions: { projectService: true, tsconfigRootDir: root },
    },
    rules: {
      '@typescript-eslint/consistent-type-imports': ['error', { fixStyle: 'inline-type-imports' }],
      '@typescript-eslint/no-floating-promises': 'error',
      // An async function that satisfies a Promise-returning contract reads better than Promise.resolve() wrappers.
      '@typescript-eslint/require-await': 'off',
      '@typescript-eslint/no-unused-vars': ['error', { argsIgnorePattern: '^_', varsIgnorePattern: '^_' }],
    },
  },
  {
    basePath: root,
    files: ['test/**/*.ts', 'bench/**/*.ts'],
    rules: {
      // Tests reach into internals on purpose (private fields, raw node objects) to prove what is and is not there.
      '@typescript-eslint/no-unsafe-member-access': 'off',
      '@typescript-eslint/no-unsafe-assignment': 'off',
      '@typescript-eslint/no-unsafe-call': 'off',
      '@typescript-eslint/no-unsafe-argument': 'off',
      '@typescript-eslint/unbound-method': 'off',
    },
  },
);
