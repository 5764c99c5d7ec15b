import { GatewayConfig } from '../config/gateway-config';

/**
 * Whether this node offers resumable sessions and keeps topic history (SPEC
 * §12): RESUME_WINDOW > 0, on one node and in cluster mode alike (SPEC §12.5:
 * session records in Redis, see resume/session-records.ts).
 */
export function isResumeOffered(config: GatewayConfig): boolean {
  return config.resume.windowMs > 0;
}
