// @ts-check
// The house rules of STYLE.md that the compiler cannot check. Type errors are
// tsc's job (`npm run lint` runs both); formatting is not linted.
const tseslint = require('typescript-eslint');

/** STYLE B2: the pure core imports nothing from Nest. */
const PURE_FILES = [
  'src/protocol/**/*.ts',
  'src/lattice/crdt.ts',
  'src/lattice/lattice-body.ts',
  'src/lattice/lattice-store.ts',
  'src/pubsub/topic-index.ts',
  'src/sessions/activity.ts',
  'src/scheduling/deadline-queue.ts',
  'src/upstream/destinations.ts',
  'src/upstream/call-reply.ts',
  'src/upstream/request-gate.ts',
  'src/upstream/upstream-response.ts',
  'src/auth/auth-response.ts',
  'src/gateway/handshake.ts',
  'src/connections/connection-id.ts',
  'src/cluster/broker.ts',
  'client/src/**/*.ts',
];

module.exports = tseslint.config(
  { ignores: ['dist/**', 'client/dist/**', 'node_modules/**', 'bench/results/**', 'coverage/**'] },
  {
    files: ['**/*.ts'],
    languageOptions: { parser: tseslint.parser },
    plugins: { '@typescript-eslint': tseslint.plugin },
  },
  {
    files: PURE_FILES,
    ignores: ['**/*.spec.ts'],
    rules: {
      'no-restricted-imports': ['error', { patterns: [{ group: ['@nestjs/*'], message: 'The pure core imports nothing from Nest (STYLE B2).' }] }],
    },
  },
  {
    // STYLE B10: waits are event-based and bounded; no sleep as synchronisation in tests.
    files: ['test/**/*.ts', 'src/**/*.spec.ts', 'client/src/**/*.spec.ts'],
    rules: {
      'no-restricted-syntax': [
        'error',
        { selector: "CallExpression[callee.name='sleep']", message: 'No sleep as synchronisation in tests (STYLE B10): await the event, bounded (harness/wait.ts).' },
      ],
    },
  },
);
