import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';

/**
 * STYLE rule 1: the pure core imports nothing from Nest (in place of an ESLint
 * no-restricted-imports rule; the project has no linter yet).
 */
const SRC = join(__dirname, '..');
const PURE_FILES = [
  ...readdirSync(join(SRC, 'protocol')).map((f) => join('protocol', f)),
  'lattice/crdt.ts',
  'lattice/lattice-body.ts',
  'lattice/lattice-store.ts',
  'pubsub/topic-index.ts',
  'sessions/activity.ts',
  'scheduling/deadline-queue.ts',
  'upstream/destinations.ts',
  'upstream/call-reply.ts',
  'upstream/request-gate.ts',
  'upstream/upstream-response.ts',
  'auth/auth-response.ts',
  'gateway/handshake.ts',
  'connections/connection-id.ts',
  'cluster/broker.ts',
].filter((f) => f.endsWith('.ts') && !f.endsWith('.spec.ts'));

describe('the pure core', () => {
  it.each(PURE_FILES)('%s imports nothing from @nestjs', (file) => {
    expect(readFileSync(join(SRC, file), 'utf8')).not.toMatch(/from '@nestjs\//);
  });
});
