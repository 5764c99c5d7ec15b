/**
 * Human durations (SPEC §1 configuration, §6.2 `expires_in`): one strict,
 * linear-time parser for both. Plain TS, no regular expression, no I/O.
 *
 * Our own, not parse-duration: its 1.x line has a regular-expression
 * denial-of-service advisory (one 7.6 MiB `expires_in` blocked the event loop
 * for 4.6 s), the fixed 2.x line is ESM-only, and it reads "10s banana" as 10 s.
 */

/** Longest duration text accepted, in characters (SPEC §6.2; the config's values are far shorter). */
export const MAX_DURATION_CHARS = 64;

const SECOND = 1000;
const MINUTE = 60 * SECOND;
const HOUR = 60 * MINUTE;
const DAY = 24 * HOUR;

/** Milliseconds per unit word (lower case): parse-duration's words, which our docs and configs use. */
const UNIT_MS: ReadonlyMap<string, number> = new Map([
  ...words(1e-6, 'ns', 'nanosecond', 'nanoseconds'),
  ...words(1e-3, 'us', 'µs', 'μs', 'microsecond', 'microseconds'),
  ...words(1, 'ms', 'msec', 'msecs', 'millisecond', 'milliseconds'),
  ...words(SECOND, 's', 'sec', 'secs', 'second', 'seconds'),
  ...words(MINUTE, 'm', 'min', 'mins', 'minute', 'minutes'),
  ...words(HOUR, 'h', 'hr', 'hrs', 'hour', 'hours'),
  ...words(DAY, 'd', 'day', 'days'),
  ...words(7 * DAY, 'w', 'wk', 'wks', 'week', 'weeks'),
  ...words(365.25 * DAY, 'y', 'yr', 'yrs', 'year', 'years'),
]);

/**
 * Parse `"0"` or one or more `<number><unit>` parts, spaces allowed around and
 * between them: `"30s"`, `"90 minutes"`, `"1h 30m"`, `"1h30m"`, `"1.5h"`,
 * `"200ms"`. A number is digits with an optional `.digits` fraction; a unit is
 * a word of the table above, in any letter case. Returns whole milliseconds
 * (rounded), or null for anything else: empty, longer than
 * {@link MAX_DURATION_CHARS}, a sign, an exponent, a number without a unit
 * (other than `"0"`), an unknown word, trailing text, or an infinite total.
 */
export function parseDurationMs(text: string): number | null {
  if (text.length > MAX_DURATION_CHARS) return null;
  const trimmed = text.trim();
  if (trimmed === '0') return 0;
  let at = 0;
  let totalMs = 0;
  let parts = 0;
  while (at < trimmed.length) {
    const numberStart = at;
    at = skipDigits(trimmed, at);
    if (at === numberStart) return null;
    if (trimmed[at] === '.') {
      const fractionStart = ++at;
      at = skipDigits(trimmed, at);
      if (at === fractionStart) return null;
    }
    const value = Number(trimmed.slice(numberStart, at));
    at = skipSpaces(trimmed, at);
    const unitStart = at;
    while (at < trimmed.length && isUnitLetter(trimmed.charCodeAt(at))) at++;
    const unitMs = UNIT_MS.get(trimmed.slice(unitStart, at).toLowerCase());
    if (unitMs === undefined) return null;
    totalMs += value * unitMs;
    parts++;
    at = skipSpaces(trimmed, at);
  }
  return parts > 0 && Number.isFinite(totalMs) ? Math.round(totalMs) : null;
}

function words(ms: number, ...names: string[]): Array<[string, number]> {
  return names.map((name) => [name, ms]);
}

function skipDigits(text: string, at: number): number {
  while (at < text.length && text.charCodeAt(at) >= 0x30 && text.charCodeAt(at) <= 0x39) at++;
  return at;
}

function skipSpaces(text: string, at: number): number {
  while (at < text.length && (text[at] === ' ' || text[at] === '\t')) at++;
  return at;
}

/** A-Z, a-z, µ (U+00B5) and μ (U+03BC). */
function isUnitLetter(code: number): boolean {
  return (code >= 0x41 && code <= 0x5a) || (code >= 0x61 && code <= 0x7a) || code === 0xb5 || code === 0x3bc;
}
