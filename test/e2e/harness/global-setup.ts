import { buildGateway } from './child-gateway';
import { ensureTestRedis } from './test-redis';

/**
 * e2e globalSetup: make sure a Redis answers at TEST_REDIS_URL (a private one
 * started when none does), then build dist/ once per run, before any worker
 * starts (workers inherit the environment it sets).
 */
export default async function globalSetup(): Promise<void> {
  await ensureTestRedis();
  buildGateway(180_000);
}
