import { ConfigError, loadConfig } from './load-config';
import { BASE, ENV_ROWS, problemsOf } from './load-config.fixtures';

/** SPEC §1, the environment: every row of ENV_ROWS (load-config.fixtures.ts), then the rules between variables. */
describe(loadConfig.name, () => {
  describe('environment variables', () => {
    const optionalRows = ENV_ROWS.filter((row) => row.key !== 'UPSTREAM_URL');

    it.each(optionalRows)('$key has its default when unset', ({ key, read, byDefault }) => {
      expect(read(loadConfig({ ...BASE, [key]: undefined }))).toEqual(byDefault);
    });

    it.each(optionalRows)('$key counts an empty string as unset', ({ key, read, byDefault }) => {
      expect(read(loadConfig({ ...BASE, [key]: '' }))).toEqual(byDefault);
    });

    it.each(ENV_ROWS)('$key accepts $valid', ({ key, read, valid, parsed }) => {
      expect(read(loadConfig({ ...BASE, [key]: valid }))).toEqual(parsed);
    });

    it.each(ENV_ROWS)('$key rejects $invalid with one clear line', ({ key, invalid, message }) => {
      expect(problemsOf({ ...BASE, [key]: invalid })).toEqual([message]);
    });

    it('requires UPSTREAM_URL without a file', () => {
      expect(problemsOf({})).toEqual(['UPSTREAM_URL: is required (or give GATEWAY_CONFIG with destinations)']);
    });

    it('a start-up that fails names the misspelt settings too (issue 34): UPSTREAM_ULR is why UPSTREAM_URL is missing', () => {
      expect(problemsOf({ UPSTREAM_ULR: 'http://127.0.0.1:9000' })).toEqual([
        'UPSTREAM_URL: is required (or give GATEWAY_CONFIG with destinations)',
        'UPSTREAM_ULR: is not a setting; did you mean UPSTREAM_URL?',
      ]);
    });

    it('routes * and gateway.* of the default handler to the default destination', () => {
      const sut = loadConfig(BASE);
      const target = { destination: 'default', pathPrefix: '' };
      expect(sut.handlers.map((h) => h.name)).toEqual(['default']);
      expect([...sut.handlers[0].messageHandlers]).toEqual([
        ['*', target],
        ['gateway.*', target],
      ]);
    });

    it('rejects CLIENT_MAX_IDLE_TIMEOUT below CLIENT_MIN_IDLE_TIMEOUT', () => {
      expect(problemsOf({ ...BASE, CLIENT_MIN_IDLE_TIMEOUT: '5m', CLIENT_MAX_IDLE_TIMEOUT: '1m' })).toEqual([
        'CLIENT_MAX_IDLE_TIMEOUT: "1m" is shorter than CLIENT_MIN_IDLE_TIMEOUT ("5m")',
      ]);
    });

    it('rejects HTTP_REQUEST_TIMEOUT below HTTP_HEADERS_TIMEOUT', () => {
      expect(problemsOf({ ...BASE, HTTP_HEADERS_TIMEOUT: '20s', HTTP_REQUEST_TIMEOUT: '10s' })).toEqual([
        'HTTP_REQUEST_TIMEOUT: "10s" is shorter than HTTP_HEADERS_TIMEOUT ("20s")',
      ]);
    });

    it('rejects TOPIC_HISTORY_TTL below RESUME_WINDOW (SPEC §12.4)', () => {
      expect(problemsOf({ ...BASE, RESUME_WINDOW: '5m', TOPIC_HISTORY_TTL: '2m' })).toEqual([
        'TOPIC_HISTORY_TTL: "2m" is shorter than RESUME_WINDOW ("5m")',
      ]);
    });

    it('rejects an ALLOWED_ORIGINS list with no entries', () => {
      expect(problemsOf({ ...BASE, ALLOWED_ORIGINS: ' , ' })).toEqual(['ALLOWED_ORIGINS: " , " lists no origin']);
    });

    it('ignores variables it does not know', () => {
      expect(loadConfig({ ...BASE, PATH: '/usr/bin', UNRELATED_TOKEN: 'x' }).listeners.public.port).toBe(8080);
    });

    it('collects every problem before throwing once', () => {
      const problems = problemsOf({ PORT: 'x', LOG_LEVEL: 'loud', UPSTREAM_TIMEOUT: '3 parsecs' });
      expect([...problems].sort()).toEqual([
        'LOG_LEVEL: "loud" is not allowed (allowed: error, warn, info, debug)',
        'PORT: "x" is not a port (0-65535)',
        'UPSTREAM_TIMEOUT: "3 parsecs" is not a duration (examples: "30s", "2m")',
        'UPSTREAM_URL: is required (or give GATEWAY_CONFIG with destinations)',
      ]);
    });

    it('never echoes secret values', () => {
      const error = (() => {
        try {
          return loadConfig({ ...BASE, BACKEND_API_TOKEN: 'top secret', REDIS_URL: 'mysql://u:pw@db' });
        } catch (caught) {
          return caught as Error;
        }
      })();
      expect(error).toBeInstanceOf(ConfigError);
      expect(String((error as Error).message)).not.toMatch(/top secret|pw@db/);
    });
  });
});
