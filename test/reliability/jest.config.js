/**
 * The reliability suite (issue 11): scenarios against the built gateway
 * (`node dist/main.js`) in a child process. Not part of `npm test`; run with
 * `npm run test:reliability` (short profile) or
 * `RELIABILITY_PROFILE=full npm run test:reliability`. One scenario at a
 * time: each loads the machine on its own.
 */
module.exports = {
  rootDir: '../..',
  testEnvironment: 'node',
  testMatch: ['<rootDir>/test/reliability/**/*.reliability-spec.ts'],
  transform: { '^.+\\.ts$': ['ts-jest', { tsconfig: 'tsconfig.json' }] },
  testTimeout: 60 * 60 * 1000,
  maxWorkers: 1,
  verbose: true,
};
