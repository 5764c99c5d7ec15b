/**
 * `connect()` rejects with this when the client stops without a hello and
 * without a fatal_error: `close()` was called (code 1000), or the connection
 * failed with reconnecting turned off (the close code seen, 1006 when none).
 */
export class ConnectionClosedError extends Error {
  override readonly name = 'ConnectionClosedError';

  constructor(
    readonly code: number,
    readonly reason: string,
  ) {
    super(`connection closed (${code}${reason === '' ? '' : ' ' + reason})`);
  }
}
