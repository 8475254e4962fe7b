/**
 * Three tiers: unit specs beside the code (pure decisions, no I/O; the gateway's and the TypeScript
 * client's); medium specs of repositories and the data layer against a real PostgreSQL with the real
 * migrations; e2e specs through HTTP with the production app. The two that need PostgreSQL share one
 * server for the run (test/support/global-setup.mts). The deployment files' specs (test/deploy) need no
 * database and run with the unit tier.
 *
 * The gateway is an ES module, and so are its specs: Jest runs them as such (`npm test` starts Node with
 * --experimental-vm-modules), and its resolver drops the `.js` that ES modules write in relative imports.
 * The global set-up and teardown run in Jest's own process, where @swc-node/register (npm test's --import)
 * compiles them and what they import.
 */
const esm = {
  transform: {
    // ES modules all: the TypeScript client, a CommonJS package of its own, included (its tests use no
    // module-system feature).
    '^.+\\.ts$': ['ts-jest', { tsconfig: { module: 'esnext', moduleResolution: 'bundler' }, useESM: true }],
    // ES-module-only packages that CommonJS dependencies require (light-my-request, behind Fastify's
    // inject, requires cookie; @fastify/static requires content-disposition). Node does that itself, but
    // Jest only from Node 24.9 on; before, it compiles them to CommonJS when they are required.
    '^.+/node_modules/(cookie|content-disposition)/.+\\.js$': ['ts-jest', { tsconfig: { allowJs: true }, useESM: true }],
  },
  transformIgnorePatterns: ['/node_modules/(?!(cookie|content-disposition)/)'],
  extensionsToTreatAsEsm: ['.ts'],
  moduleNameMapper: { '^(\\.{1,2}/.*)\\.js$': '$1' },
};
const withDatabase = { globalSetup: '<rootDir>/test/support/global-setup.mts', globalTeardown: '<rootDir>/test/support/global-teardown.mts' };

export default {
  // A ceiling for a test that hangs, not a measure: on a busy two-core machine the e2e tests run several times slower.
  testTimeout: 180_000,
  projects: [
    {
      displayName: 'unit',
      testEnvironment: 'node',
      rootDir: '.',
      testMatch: ['<rootDir>/src/**/*.spec.ts', '<rootDir>/clients/typescript/src/**/*.spec.ts', '<rootDir>/test/deploy/**/*.spec.ts'],
      ...esm,
    },
    { displayName: 'medium', testEnvironment: 'node', rootDir: '.', testMatch: ['<rootDir>/test/medium/**/*.medium-spec.ts'], ...esm, ...withDatabase },
    { displayName: 'e2e', testEnvironment: 'node', rootDir: '.', testMatch: ['<rootDir>/test/e2e/**/*.e2e-spec.ts'], ...esm, ...withDatabase },
  ],
};
