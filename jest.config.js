/**
 * Three projects: fast unit specs beside the pure code, the client SDK's unit
 * specs (client/src), and e2e specs against the real app.
 */
const tsJest = ['ts-jest', { tsconfig: 'tsconfig.json' }];

module.exports = {
  // A global option: jest ignores testTimeout inside a project.
  testTimeout: 20000,
  projects: [
    {
      displayName: 'unit',
      testEnvironment: 'node',
      rootDir: '.',
      testMatch: ['<rootDir>/src/**/*.spec.ts'],
      transform: { '^.+\\.ts$': tsJest },
      // The broker spec runs on a real Redis: a private redis-server when none answers at TEST_REDIS_URL.
      globalSetup: '<rootDir>/test/e2e/harness/redis-global-setup.ts',
      globalTeardown: '<rootDir>/test/e2e/harness/global-teardown.ts',
    },
    {
      displayName: 'client',
      testEnvironment: 'node',
      rootDir: '.',
      testMatch: ['<rootDir>/client/src/**/*.spec.ts'],
      transform: { '^.+\\.ts$': tsJest },
    },
    {
      displayName: 'e2e',
      testEnvironment: 'node',
      rootDir: '.',
      testMatch: ['<rootDir>/test/**/*.e2e-spec.ts'],
      transform: { '^.+\\.ts$': tsJest },
      setupFiles: ['reflect-metadata'],
      // Specs that run dist/main.js in a child process need a build of this checkout: made once, here.
      // And a Redis for the cluster specs: a private redis-server when none answers at TEST_REDIS_URL.
      globalSetup: '<rootDir>/test/e2e/harness/global-setup.ts',
      globalTeardown: '<rootDir>/test/e2e/harness/global-teardown.ts',
    },
  ],
};
