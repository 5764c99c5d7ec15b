/**
 * The log reasons of an authorization answer that breaks a rule of SPEC §3,
 * naming the exact rule, so that a backend's author sees what to change.
 * They never hold the user id itself: at most one offending character, by
 * its code point.
 */

/** SPEC §3: the user id's length and character set. */
const MAX_USER_ID_CHARS = 256;
const USER_ID_CHAR = /[A-Za-z0-9:_/-]/;
const USER_ID_SET = 'A-Z a-z 0-9 : _ / -';
/** A content type longer than this is cut in the reason (it comes from the backend). */
const MAX_SHOWN_CONTENT_TYPE = 100;

/** Why `value` (the answer's `user_id`, already known to be invalid) is not a user id. */
export function userIdProblem(value: unknown): string {
  if (value === undefined) return 'user_id missing';
  if (typeof value !== 'string') return `user_id is ${value === null ? 'null' : `a ${typeof value}`}, not a string`;
  if (value.length === 0) return 'user_id is empty';
  if (value.length > MAX_USER_ID_CHARS) return `user_id longer than ${MAX_USER_ID_CHARS} characters (${value.length})`;
  let index = 0;
  for (const char of value) {
    if (!USER_ID_CHAR.test(char)) {
      const codePoint = char.codePointAt(0)!.toString(16).toUpperCase().padStart(4, '0');
      return `user_id has a character outside ${USER_ID_SET} (U+${codePoint} at index ${index})`;
    }
    index += char.length;
  }
  return 'user_id invalid';
}

/** The answer's content type was not JSON. */
export function contentTypeProblem(contentType: string | undefined): string {
  if (contentType === undefined || contentType === '') return 'no content type (must be application/json)';
  const shown = JSON.stringify(contentType.slice(0, MAX_SHOWN_CONTENT_TYPE));
  return `content type ${shown} is not application/json (with utf-8 if a charset is given)`;
}
