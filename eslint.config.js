// @ts-check
// The house rules of STYLE.md that the compiler cannot check. Type errors are
// tsc's job and formatting is Prettier's (`npm run lint` runs all three).
const tseslint = require('typescript-eslint');

/** STYLE B2: the pure core imports nothing from Nest. */
const PURE_FILES = [
  'src/protocol/**/*.ts',
  'src/lattice/crdt.ts',
  'src/lattice/lattice-body.ts',
  'src/lattice/lattice-store.ts',
  'src/pubsub/topic-index.ts',
  'src/pubsub/topic-history.ts',
  'src/pubsub/resumable-positions.ts',
  'src/gateway/resume-offer.ts',
  'src/resume/session-token.ts',
  'src/resume/detach-rule.ts',
  'src/resume/resume-settings.ts',
  'src/activity/activity.ts',
  'src/scheduling/deadline-queue.ts',
  'src/upstream/destinations.ts',
  'src/upstream/call-reply.ts',
  'src/upstream/request-gate.ts',
  'src/upstream/upstream-response.ts',
  'src/auth/auth-response.ts',
  'src/gateway/handshake.ts',
  'src/cluster/broker.ts',
  'src/cluster/channels.ts',
  'src/cluster/partition-tags.ts',
  'src/lattice/lattice-entry.ts',
  'client/src/**/*.ts',
];

/** STYLE B4 and issue 10: cluster/ stays below the features; they register with it, it never imports them. */
const FEATURE_FOLDERS = [
  'auth',
  'backend-api',
  'connections',
  'gateway',
  'health',
  'lattice',
  'lifecycle',
  'pubsub',
  'resume',
  'activity',
  'upstream',
  'users-lattice',
];

const NO_NEST = { group: ['@nestjs/*'], message: 'The pure core imports nothing from Nest (STYLE B2).' };
const BELOW_FEATURES = {
  group: FEATURE_FOLDERS.map((f) => `../${f}/*`),
  message: 'cluster/ is below the feature modules: commands as data, features register handlers (issue 10).',
};

module.exports = tseslint.config(
  { ignores: ['dist/**', 'client/dist/**', 'node_modules/**', 'bench/results/**', 'coverage/**'] },
  {
    files: ['**/*.ts'],
    languageOptions: { parser: tseslint.parser },
    plugins: { '@typescript-eslint': tseslint.plugin },
  },
  {
    files: ['src/cluster/**/*.ts'],
    rules: { 'no-restricted-imports': ['error', { patterns: [BELOW_FEATURES] }] },
  },
  {
    files: PURE_FILES.filter((f) => !f.startsWith('src/cluster/')),
    ignores: ['**/*.spec.ts'],
    rules: { 'no-restricted-imports': ['error', { patterns: [NO_NEST] }] },
  },
  {
    // After the cluster block: a later block replaces a rule's options, so pure cluster files list both.
    files: PURE_FILES.filter((f) => f.startsWith('src/cluster/')),
    ignores: ['**/*.spec.ts'],
    rules: { 'no-restricted-imports': ['error', { patterns: [NO_NEST, BELOW_FEATURES] }] },
  },
  {
    // STYLE B10: waits are event-based and bounded; no sleep as synchronisation in tests.
    files: ['test/**/*.ts', 'src/**/*.spec.ts', 'client/src/**/*.spec.ts'],
    rules: {
      'no-restricted-syntax': [
        'error',
        {
          selector: "CallExpression[callee.name='sleep']",
          message: 'No sleep as synchronisation in tests (STYLE B10): await the event, bounded (harness/wait.ts).',
        },
      ],
    },
  },
);
