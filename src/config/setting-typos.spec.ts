import { loadConfigWithWarnings } from './load-config';
import { alignmentDistance, settingTypoWarnings } from './setting-typos';

const SETTINGS = ['BACKEND_API_TOKEN', 'REDIS_URL', 'PING_INTERVAL', 'HOST', 'PORT', 'NODE_ID', 'LOG_LEVEL'];

describe(settingTypoWarnings.name, () => {
  it.each([
    ['BACKEND_API_TOKN', 'BACKEND_API_TOKEN'],
    ['REDIS_ULR', 'REDIS_URL'],
    ['PING_INTREVAL', 'PING_INTERVAL'],
    ['log_level', 'LOG_LEVEL'],
    ['PORTS', 'PORT'],
    ['NODEID', 'NODE_ID'],
  ])('names the setting %s probably meant: %s', (name, meant) => {
    expect(settingTypoWarnings([name], SETTINGS)).toEqual([`${name}: is not a setting; did you mean ${meant}?`]);
  });

  it.each([
    'HOME',
    'HOSTNAME',
    'NODE_ENV',
    'PWD',
    'PATH',
    'REDIS_PORT',
    'REDIS_HOST',
    'NODE_VERSION',
    'TERM',
    'KUBERNETES_PORT',
    'weird-name',
    'HOST',
    'REDIS_URL',
  ])('says nothing about %s', (name) => {
    expect(settingTypoWarnings([name], SETTINGS)).toEqual([]);
  });
});

describe(alignmentDistance.name, () => {
  it.each([
    ['', '', 0],
    ['ABC', 'ABC', 0],
    ['ULR', 'URL', 1],
    ['TOKN', 'TOKEN', 1],
    ['HOME', 'HOST', 2],
    ['CA', 'ABC', 3],
  ])('%p → %p: %p', (a, b, distance) => {
    expect(alignmentDistance(a, b, 10)).toBe(distance);
  });

  it('stops past its limit', () => {
    expect(alignmentDistance('AAAAAAAA', 'BBBBBBBB', 2)).toBe(3);
  });
});

describe('the loader', () => {
  it('names the key an unknown YAML key probably meant, and keeps it an error', () => {
    const yaml =
      'destinations:\n  chat: { url: "http://chat.test", max_socket: 3 }\nhandlers:\n  h: { path: /, message_handlers: { "*": chat/ } }\n';
    expect(() => loadConfigWithWarnings({}, yaml)).toThrow(
      'destinations.chat.max_socket: is not allowed (allowed: url, timeout, max_sockets, queue_limit, request_id_header, override_host_header); did you mean max_sockets?',
    );
  });

  it('warns about a misspelt environment setting, never echoing its value', () => {
    const { warnings } = loadConfigWithWarnings({
      UPSTREAM_URL: 'http://u.test',
      BACKEND_API_TOKN: 'hunter2',
      PING_INTREVAL: '5s',
    });
    expect(warnings).toEqual([
      'BACKEND_API_TOKN: is not a setting; did you mean BACKEND_API_TOKEN?',
      'PING_INTREVAL: is not a setting; did you mean PING_INTERVAL?',
    ]);
    expect(warnings.join('\n')).not.toContain('hunter2');
  });

  it('knows every setting of the environment DTO (no warning for a correct name)', () => {
    const env = {
      UPSTREAM_URL: 'http://u.test',
      SHUTDOWN_GRACE: '1s',
      CLIENT_QUEUE_MAX_BYTES: '1MiB',
      BACKEND_API_INSECURE: 'false',
    };
    expect(loadConfigWithWarnings(env).warnings).toEqual([]);
  });
});
