import { MAX_DURATION_CHARS, parseDurationMs } from './duration';

describe(parseDurationMs.name, () => {
  it.each([
    ['30s', 30_000],
    ['90 minutes', 5_400_000],
    ['200ms', 200],
    ['2h', 7_200_000],
    ['1.5h', 5_400_000],
    ['2m', 120_000],
    ['0', 0],
    ['0s', 0],
    [' 0 ', 0],
    ['1h 30m', 5_400_000],
    ['1h30m', 5_400_000],
    ['1h  30m 15s', 5_415_000],
    ['10 s', 10_000],
    ['  10s  ', 10_000],
    ['1.5s', 1_500],
    ['10S', 10_000],
    ['1 Hour', 3_600_000],
    ['24d', 2_073_600_000],
    ['1w', 604_800_000],
    ['1 sec', 1_000],
    ['3 secs', 3_000],
    ['5 mins', 300_000],
    ['2 hrs', 7_200_000],
    ['1 day', 86_400_000],
    ['1500us', 2],
    ['1500µs', 2],
    ['1000000ns', 1],
    ['0.4ms', 0],
    ['007s', 7_000],
    ['0'.repeat(MAX_DURATION_CHARS - 2) + '1s', 1_000],
  ])('reads %j as %d ms', (text, expectedMs) => {
    expect(parseDurationMs(text)).toBe(expectedMs);
  });

  it.each([
    ['empty', ''],
    ['blank', '  '],
    ['a number without a unit', '1000'],
    ['a zero with a fraction and no unit', '0.0'],
    ['two zeros', '00'],
    ['an unknown unit', '3 parsecs'],
    ['a word only', 'forever'],
    ['Infinity', 'Infinity'],
    ['a sign', '-1s'],
    ['a plus sign', '+1s'],
    ['an exponent', '1e3s'],
    ['an overflowing exponent', '1e400s'],
    ['a trailing word', '10s banana'],
    ['a leading word', 'banana 10s'],
    ['a trailing number', '1s2'],
    ['a comma', '1,000s'],
    ['an underscore', '1_000s'],
    ['a fraction without digits', '1.s'],
    ['a fraction without an integer part', '.5s'],
    ['a unit before its number', 's10'],
    ['a separator', '1h, 30m'],
    ['a newline between parts', '1h\n30m'],
    [`${MAX_DURATION_CHARS + 1} characters`, '0'.repeat(MAX_DURATION_CHARS - 1) + '1s'],
    ['1 MiB of digits', '1'.repeat(1024 * 1024) + 's'],
    ['a unit word that is not a unit', '1 moment'],
    ['a plural of a unit without one', '1 mss'],
  ])('rejects %s', (_case, text) => {
    expect(parseDurationMs(text)).toBeNull();
  });
});
