/**
 * SPEC §12.5: a command was applied to this node's copy of a resumable
 * session that another node had taken over meanwhile (the takeover's notice
 * was still on its way). Its record refused the write; the broker then sends
 * the command on to `holder`, so the 204 still means "in effect where the
 * session lives".
 */
export class SessionMovedError extends Error {
  constructor(readonly holder: string) {
    super(`the session is held by node ${holder} now`);
    this.name = 'SessionMovedError';
  }
}
