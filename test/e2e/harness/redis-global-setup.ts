import { ensureTestRedis } from './test-redis';

/** The unit project's globalSetup: its broker spec runs on a real Redis (a private one when none answers). */
export default async function redisGlobalSetup(): Promise<void> {
  await ensureTestRedis();
}
