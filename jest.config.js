/**
 * Three tiers: unit specs beside the code (pure decisions, no I/O; the gateway's and the TypeScript
 * client's); medium specs of repositories and the data layer against a real PostgreSQL with the real
 * migrations; e2e specs through HTTP with the production app. The two that need PostgreSQL share one
 * server for the run (test/support/global-setup.ts). The deployment files' specs (test/deploy) need no
 * database and run with the unit tier.
 */
const transform = { '^.+\\.ts$': ['ts-jest', { tsconfig: 'tsconfig.json' }] };
const withDatabase = { globalSetup: '<rootDir>/test/support/global-setup.ts', globalTeardown: '<rootDir>/test/support/global-teardown.ts' };

module.exports = {
  // A ceiling for a test that hangs, not a measure: on a busy two-core machine the e2e tests run several times slower.
  testTimeout: 180_000,
  projects: [
    {
      displayName: 'unit',
      testEnvironment: 'node',
      rootDir: '.',
      testMatch: ['<rootDir>/src/**/*.spec.ts', '<rootDir>/clients/typescript/src/**/*.spec.ts', '<rootDir>/test/deploy/**/*.spec.ts'],
      transform,
    },
    { displayName: 'medium', testEnvironment: 'node', rootDir: '.', testMatch: ['<rootDir>/test/medium/**/*.medium-spec.ts'], transform, ...withDatabase },
    { displayName: 'e2e', testEnvironment: 'node', rootDir: '.', testMatch: ['<rootDir>/test/e2e/**/*.e2e-spec.ts'], transform, ...withDatabase },
  ],
};
