const IDENTITY_SCHEME = 'Gateway+json ';

/** Who the connection is, as the backend said (SPEC §3). */
export class Identity {
  private authorizationValue: string | null = null;

  constructor(
    readonly userId: string,
    /** Compact JSON of the whole authorization response object. */
    readonly json: string,
  ) {}

  /**
   * `Gateway+json <base64 of json>`, built at the first call and kept: an idle
   * connection never holds it, a calling one builds it once.
   */
  get authorization(): string {
    return (this.authorizationValue ??= IDENTITY_SCHEME + Buffer.from(this.json, 'utf8').toString('base64'));
  }
}
