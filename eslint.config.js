// ESLint flat config: type-aware checks that catch what tsc does not
// (floating promises above all), and the house rule that packages meet
// only through their public faces.
import tseslint from 'typescript-eslint';

export default tseslint.config(
  {
    ignores: ['**/dist/**', '**/node_modules/**', 'packages/proto/src/gen/**', '.docket/**', 'deploy/**'],
  },
  {
    files: ['**/*.ts'],
    extends: [tseslint.configs.base],
    languageOptions: {
      parserOptions: {
        project: ['./packages/*/tsconfig.json', './services/*/tsconfig.json', './tsconfig.tests.json'],
        tsconfigRootDir: import.meta.dirname,
      },
    },
    rules: {
      '@typescript-eslint/no-floating-promises': 'error',
      '@typescript-eslint/no-misused-promises': ['error', { checksVoidReturn: false }],
      'no-restricted-imports': [
        'error',
        {
          patterns: [
            { group: ['@docket/*/src/*', '@docket/*/dist/*'], message: 'Import another package through its public face.' },
            { group: ['**/packages/*/src/**', '**/services/*/src/**'], message: 'Import another package through its public face.' },
          ],
        },
      ],
    },
  },
);
