import { stopTestRedis } from './test-redis';

/** globalTeardown: stop the private redis-server of the run, if a globalSetup started one (by PID). */
export default async function globalTeardown(): Promise<void> {
  await stopTestRedis();
}
