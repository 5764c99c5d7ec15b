import { GatewayConfig } from '../config/gateway-config';

/**
 * Whether this node offers resumable sessions and keeps topic history (SPEC
 * §12): RESUME_WINDOW > 0, on one node. Cluster mode does not offer them yet
 * (SPEC §12.5 needs session records and history in Redis): there the opt-in
 * is ignored, exactly as with RESUME_WINDOW=0.
 */
export function isResumeOffered(config: GatewayConfig): boolean {
  return config.resume.windowMs > 0 && config.redisUrl === null;
}
