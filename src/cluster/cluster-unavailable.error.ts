/** Why a `/v1` call that needs another node cannot be served (SPEC §11): answered 503 with this code. */
export type ClusterFaultCode = 'owner_unreachable' | 'cluster_unavailable';

/**
 * Thrown by the Redis broker when a command cannot reach the node(s) it
 * needs. The backend API filter answers 503 `{"error": code, "message"}`;
 * the caller may retry.
 */
export class ClusterUnavailableError extends Error {
  constructor(
    readonly code: ClusterFaultCode,
    message: string,
  ) {
    super(message);
    this.name = 'ClusterUnavailableError';
  }
}
