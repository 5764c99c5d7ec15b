import type { Destination } from './gateway-config';
import { loadConfig } from './load-config';
import { BASE, destination, problemsOf } from './load-config.fixtures';

/** How durations, byte sizes and booleans read, and what loadConfig returns. */
describe(loadConfig.name, () => {
  describe('durations, sizes and booleans', () => {
    it.each([
      ['30s', 30_000],
      ['90 minutes', 5_400_000],
      ['200ms', 200],
      ['2h', 7_200_000],
      ['1h 30m', 5_400_000],
      ['1.5s', 1_500],
    ])('reads the duration %j as %d ms', (text, expectedMs) => {
      expect(destination(loadConfig({ ...BASE, UPSTREAM_TIMEOUT: text })).timeoutMs).toBe(expectedMs);
    });

    it.each(['3 parsecs', '-1s', ' ', '1000', '1s garbage', '1s2', 'Infinity', 'forever'])(
      'rejects the duration %j',
      (text) => {
        expect(problemsOf({ ...BASE, UPSTREAM_TIMEOUT: text })).toEqual([
          `UPSTREAM_TIMEOUT: ${JSON.stringify(text)} is not a duration (examples: "30s", "2m")`,
        ]);
      },
    );

    it.each([
      ['1MiB', 1_048_576],
      ['10MiB', 10_485_760],
      ['4MiB', 4_194_304],
      ['512KiB', 524_288],
      ['1048576', 1_048_576],
      ['10MB', 10_000_000],
      ['2kb', 2_000],
      ['1GiB', 1_073_741_824],
    ])('reads the byte size %j as %d', (text, expected) => {
      expect(loadConfig({ ...BASE, MAX_FRAME_BYTES: text }).limits.maxFrameBytes).toBe(expected);
    });

    it.each(['1.5MiB', '-1', 'MiB', '10 parsecs', '0x10', '1e6'])('rejects the byte size %j', (text) => {
      expect(problemsOf({ ...BASE, MAX_FRAME_BYTES: text })).toEqual([
        `MAX_FRAME_BYTES: ${JSON.stringify(text)} is not a byte size (examples: "1048576", "512KiB", "10MiB")`,
      ]);
    });

    it.each([
      ['true', true],
      ['false', false],
      ['1', true],
      ['0', false],
      ['yes', true],
      ['no', false],
      ['YES', true],
    ])('reads the boolean %j as %s', (text, expected) => {
      expect(loadConfig({ ...BASE, SESSION_INACTIVE_NOTIFY: text }).activity.shouldNotifyInactive).toBe(expected);
    });
  });

  describe('the result', () => {
    it('is deeply frozen, Maps and Sets included', () => {
      const sut = loadConfig({ ...BASE, ALLOWED_ORIGINS: 'https://a.test' });
      expect(Object.isFrozen(sut)).toBe(true);
      expect(Object.isFrozen(sut.limits)).toBe(true);
      expect(Object.isFrozen(destination(sut))).toBe(true);
      expect(Object.isFrozen(sut.handlers[0].messageHandlers.get('*'))).toBe(true);
      expect(() => (sut.destinations as Map<string, Destination>).delete('default')).toThrow(TypeError);
      expect(() => (sut.allowedOrigins as Set<string>).add('https://b.test')).toThrow(TypeError);
    });

    it('carries the package.json version', () => {
      expect(loadConfig(BASE).version).toMatch(/^\d+\.\d+\.\d+/);
    });

    it('draws a different random NODE_ID per load', () => {
      expect(loadConfig(BASE).nodeId).not.toBe(loadConfig(BASE).nodeId);
    });
  });
});
