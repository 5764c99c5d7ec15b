import { randomUUID } from 'node:crypto';

/** A caller's id is kept when it is 1 to 128 visible ASCII characters; anything else is replaced. */
const CALLER_ID = /^[\x21-\x7e]{1,128}$/;

/**
 * The id of a /v1 request (issue 20): the one the caller sent in the request-id
 * header, when it is 1 to 128 visible ASCII characters (so it is safe in a
 * response header and a log line), else a new random UUID. A repeated header
 * counts as absent.
 */
export function requestIdOf(header: string | string[] | undefined): string {
  return typeof header === 'string' && CALLER_ID.test(header) ? header : randomUUID();
}
