/**
 * Spikes (issue 30): experiments whose output is a report, not a verdict. Not
 * part of `npm test`; run with `npx jest -c test/spikes/jest.config.js`.
 */
module.exports = {
  rootDir: '../..',
  testEnvironment: 'node',
  testMatch: ['<rootDir>/test/spikes/**/*.spike-spec.ts'],
  transform: { '^.+\\.ts$': ['ts-jest', { tsconfig: 'tsconfig.json' }] },
  testTimeout: 120_000,
  maxWorkers: 1,
  verbose: true,
};
