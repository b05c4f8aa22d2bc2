// Lint (npm run lint, run by npm test): typescript-eslint's recommended rules without type
// information (fast enough to run on every test run), formatting left to Prettier, plus the
// project's own boundaries below.
import js from '@eslint/js';
import globals from 'globals';
import prettier from 'eslint-config-prettier';
import tseslint from 'typescript-eslint';

export default tseslint.config(
  { ignores: ['dist/**', 'coverage/**', 'node_modules/**', '.data/**', 'test/.kafka/**'] },
  js.configs.recommended,
  ...tseslint.configs.recommended,
  prettier,
  {
    languageOptions: { globals: globals.node },
    rules: {
      // polling loops wait out a refused connection with an empty catch
      'no-empty': ['error', { allowEmptyCatch: true }],
      '@typescript-eslint/no-unused-vars': [
        'error',
        { argsIgnorePattern: '^_', varsIgnorePattern: '^_', destructuredArrayIgnorePattern: '^_', caughtErrors: 'none' },
      ],
    },
  },
  {
    // A migration is frozen when it ships: it carries its own SQL and never runs code a later release changes.
    files: ['src/database/migrations/**/*.ts'],
    rules: {
      'no-restricted-imports': [
        'error',
        { patterns: [{ regex: '^\\.', message: 'A migration imports nothing from src/: copy the SQL as of its release into it.' }] },
      ],
    },
  },
  {
    files: ['**/*.spec.ts', '**/*.int-spec.ts', '**/*.e2e-spec.ts', 'test/**/*.ts'],
    rules: {
      'no-restricted-properties': ['error', { property: 'toBeDefined', message: 'Assert the value itself: toBeDefined passes for anything but undefined.' }],
      // response bodies are JSON read by the test: typing each one would restate the schemas the tests check
      '@typescript-eslint/no-explicit-any': 'off',
    },
  },
);
