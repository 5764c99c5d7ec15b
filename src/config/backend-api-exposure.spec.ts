import { backendApiExposure, isLoopbackHost } from './backend-api-exposure';
import { ConfigError, loadConfigWithWarnings } from './load-config';

const BASE = { UPSTREAM_URL: 'http://u.test' };

describe(isLoopbackHost.name, () => {
  it.each([
    ['127.0.0.1', true],
    ['127.1.2.3', true],
    ['localhost', true],
    ['LOCALHOST', true],
    ['::1', true],
    ['::ffff:127.0.0.1', true],
    ['0.0.0.0', false],
    ['::', false],
    ['10.0.0.5', false],
    ['gateway.internal', false],
    ['127.example', false],
  ])('%p → %p', (host, expected) => {
    expect(isLoopbackHost(host)).toBe(expected);
  });
});

describe(backendApiExposure.name, () => {
  it('is safe on loopback or with a token', () => {
    expect(backendApiExposure({ host: '127.0.0.1', hasToken: false, isInsecureAccepted: false })).toEqual({
      problem: null,
      warning: null,
    });
    expect(backendApiExposure({ host: '0.0.0.0', hasToken: true, isInsecureAccepted: false })).toEqual({
      problem: null,
      warning: null,
    });
  });
});

describe('the loader and an exposed backend API (issue 20)', () => {
  function problemsOf(env: Record<string, string>): readonly string[] {
    try {
      loadConfigWithWarnings(env);
    } catch (error) {
      if (error instanceof ConfigError) return error.problems;
      throw error;
    }
    throw new Error('expected a ConfigError');
  }

  it('refuses a non-loopback BACKEND_API_HOST without BACKEND_API_TOKEN, in one line saying how to fix it', () => {
    expect(problemsOf({ ...BASE, BACKEND_API_HOST: '0.0.0.0' })).toEqual([
      'BACKEND_API_TOKEN: is required because BACKEND_API_HOST "0.0.0.0" is not a loopback address ' +
        '(set BACKEND_API_TOKEN to a secret, or BACKEND_API_HOST=127.0.0.1, or BACKEND_API_INSECURE=true to accept an open /v1)',
    ]);
  });

  it('refuses a misspelt token the same way, and the refusal names the typo (issue 34)', () => {
    const problems = problemsOf({ ...BASE, BACKEND_API_HOST: '0.0.0.0', BACKEND_API_TOKN: 'secret' });
    expect(problems).toHaveLength(2);
    expect(problems[1]).toBe('BACKEND_API_TOKN: is not a setting; did you mean BACKEND_API_TOKEN?');
  });

  it('starts with BACKEND_API_TOKEN, with no warning', () => {
    const { config, warnings } = loadConfigWithWarnings({
      ...BASE,
      BACKEND_API_HOST: '0.0.0.0',
      BACKEND_API_TOKEN: 'b71f0c9e4a2d8635e1c7',
    });
    expect(config.backendApiToken).toBe('b71f0c9e4a2d8635e1c7');
    expect(warnings).toEqual([]);
  });

  it('starts with BACKEND_API_INSECURE=true, with a warning', () => {
    const { warnings } = loadConfigWithWarnings({ ...BASE, BACKEND_API_HOST: '::', BACKEND_API_INSECURE: 'true' });
    expect(warnings).toEqual([
      expect.stringMatching(
        /^BACKEND_API_INSECURE: the backend API \(\/v1\) listens on "::" without BACKEND_API_TOKEN/,
      ),
    ]);
  });

  it('checks BACKEND_API_INSECURE is a boolean', () => {
    expect(problemsOf({ ...BASE, BACKEND_API_INSECURE: 'sure' })).toEqual([
      'BACKEND_API_INSECURE: "sure" is not a boolean (allowed: true, false, 1, 0, yes, no)',
    ]);
  });
});
