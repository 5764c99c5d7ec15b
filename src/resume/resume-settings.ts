import { GatewayConfig } from '../config/gateway-config';

/**
 * Whether this node offers resumable sessions and keeps topic history (SPEC
 * §12): RESUME_WINDOW > 0, on one node and in cluster mode alike (there the
 * history lives in Redis, SPEC §12.4). With RESUME_WINDOW=0 the opt-in is
 * ignored and publish takes today's path.
 */
export function isResumeOffered(config: GatewayConfig): boolean {
  return config.resume.windowMs > 0;
}
