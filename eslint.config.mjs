// @ts-check
// The NestJS application template's lint set-up (typescript-eslint's type-checked rules, the template's
// exceptions), for an ES module. Formatting is Prettier's alone (`npm run format:check`), so the rules that
// would argue with it are off (eslint-config-prettier); CONTRIBUTING.md, "Conventions", says why.
import eslint from '@eslint/js';
import eslintConfigPrettier from 'eslint-config-prettier/flat';
import globals from 'globals';
import tseslint from 'typescript-eslint';

export default tseslint.config(
  {
    ignores: ['dist/', 'coverage/', 'test-results/', '**/node_modules/', 'test/openapi-client/generated/', 'test/openapi-client/journey.ts'],
  },
  {
    files: ['src/**/*.{ts,js}', 'test/**/*.{ts,mts}', 'bench/**/*.ts', 'scripts/**/*.{ts,mjs}', 'clients/typescript/src/**/*.ts'],
    extends: [eslint.configs.recommended, ...tseslint.configs.recommendedTypeChecked, eslintConfigPrettier],
    languageOptions: {
      globals: { ...globals.node, ...globals.jest },
      sourceType: 'module',
      parserOptions: {
        projectService: true,
        tsconfigRootDir: import.meta.dirname,
      },
    },
    rules: {
      '@typescript-eslint/no-explicit-any': 'off',
      '@typescript-eslint/no-floating-promises': 'warn',
      '@typescript-eslint/no-unsafe-argument': 'warn',
      // A static mapper passed to map() has no `this` to lose.
      '@typescript-eslint/unbound-method': ['error', { ignoreStatic: true }],
      // An async method without an await keeps an interface's Promise and turns a throw into a rejection.
      '@typescript-eslint/require-await': 'off',
      // Control characters are matched on purpose: they are what the gateway strips or refuses.
      'no-control-regex': 'off',
      '@typescript-eslint/no-unused-vars': ['error', { argsIgnorePattern: '^_', varsIgnorePattern: '^_', ignoreRestSiblings: true }],
    },
  },
  {
    // Tests and benchmarks read answers as JSON, whose type is `any` by design: the unsafe-any rules would
    // ask for a cast on every assertion. Spies replace prototype methods and call them with their own `this`.
    files: ['test/**/*.{ts,mts}', '**/*.spec.ts', 'bench/**/*.ts'],
    rules: {
      '@typescript-eslint/no-unsafe-assignment': 'off',
      '@typescript-eslint/no-unsafe-member-access': 'off',
      '@typescript-eslint/no-unsafe-call': 'off',
      '@typescript-eslint/no-unsafe-return': 'off',
      '@typescript-eslint/no-unsafe-argument': 'off',
      '@typescript-eslint/unbound-method': 'off',
    },
  },
  {
    // The admin console's scripts run in the browser, outside the TypeScript project.
    files: ['src/admin/console/**/*.js'],
    extends: [tseslint.configs.disableTypeChecked],
    languageOptions: { globals: { ...globals.browser } },
  },
  {
    files: ['scripts/**/*.mjs'],
    extends: [tseslint.configs.disableTypeChecked],
  },
);
