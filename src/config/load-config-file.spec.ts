import { loadConfig, loadConfigWithWarnings } from './load-config';
import { BASE, EXAMPLE_YAML, destination, problemsOf } from './load-config.fixtures';

/** SPEC §1: the GATEWAY_CONFIG file (destinations, handlers), beside the environment rows of load-config.spec.ts. */
describe('GATEWAY_CONFIG file', () => {
  const DESTS = 'destinations: { chat: { url: "http://chat.test" } }\n';
  const file = (handlers: string, destinations = DESTS): string => `${destinations}handlers:\n${handlers}`;
  const CHAT = '  chat1: { path: /chat1, message_handlers: { "*": chat/ } }\n';

  it('loads the example file', () => {
    const sut = loadConfig({}, EXAMPLE_YAML);
    expect([...sut.destinations.values()]).toEqual([
      {
        name: 'chat',
        url: 'http://chat.internal:8000',
        timeoutMs: 30_000,
        maxSockets: 100,
        queueLimit: 100_000,
        requestIdHeader: 'X-Request-Id',
        overrideHostHeader: 'chat.internal',
      },
      {
        name: 'auth',
        url: 'http://auth.internal:8000',
        timeoutMs: 30_000,
        maxSockets: 100,
        queueLimit: 100_000,
        requestIdHeader: null,
        overrideHostHeader: null,
      },
    ]);
    expect(sut.handlers.map((h) => [h.name, h.path, [...h.messageHandlers]])).toEqual([
      [
        'chat1',
        '/chat1',
        [
          ['*', { destination: 'chat', pathPrefix: '' }],
          ['gateway.*', { destination: 'auth', pathPrefix: '/chat1' }],
          ['rooms.history', { destination: 'chat', pathPrefix: '/v2' }],
        ],
      ],
    ]);
  });

  it.each([
    ['chat/', { destination: 'chat', pathPrefix: '' }],
    ['chat', { destination: 'chat', pathPrefix: '' }],
    ['chat/chat1', { destination: 'chat', pathPrefix: '/chat1' }],
    ['chat/v2/x', { destination: 'chat', pathPrefix: '/v2/x' }],
    ['chat/v2//', { destination: 'chat', pathPrefix: '/v2' }],
  ])('reads the target %j', (target, expected) => {
    const sut = loadConfig({}, file(`  h: { path: /h, message_handlers: { "*": "${target}" } }\n`));
    expect(sut.handlers[0].messageHandlers.get('*')).toEqual(expected);
  });

  it('ignores UPSTREAM_URL and WS_PATH with a warning', () => {
    const sut = loadConfigWithWarnings({ UPSTREAM_URL: 'not a url', WS_PATH: 'nope' }, EXAMPLE_YAML);
    expect(sut.warnings).toEqual([
      'UPSTREAM_URL: ignored because GATEWAY_CONFIG defines handlers and destinations',
      'WS_PATH: ignored because GATEWAY_CONFIG defines handlers and destinations',
    ]);
    expect([...sut.config.destinations.keys()]).toEqual(['chat', 'auth']);
  });

  it('has no warnings without a file', () => {
    expect(loadConfigWithWarnings(BASE).warnings).toEqual([]);
  });

  it('uses the destination-level env vars as defaults only', () => {
    const env = {
      UPSTREAM_TIMEOUT: '5s',
      UPSTREAM_MAX_SOCKETS: '7',
      UPSTREAM_QUEUE_LIMIT: '9',
      REQUEST_ID_HEADER: 'X-Trace',
    };
    const sut = loadConfig(env, EXAMPLE_YAML);
    expect(destination(sut, 'chat')).toMatchObject({
      timeoutMs: 30_000,
      maxSockets: 100,
      queueLimit: 100_000,
      requestIdHeader: 'X-Request-Id',
    });
    expect(destination(sut, 'auth')).toMatchObject({
      timeoutMs: 5_000,
      maxSockets: 7,
      queueLimit: 9,
      requestIdHeader: 'X-Trace',
    });
  });

  it('lets every other env var apply alongside the file', () => {
    const sut = loadConfig({ PORT: '9000', LOG_LEVEL: 'debug' }, EXAMPLE_YAML);
    expect([sut.listeners.public.port, sut.log.level]).toEqual([9000, 'debug']);
  });

  it('reports env and file problems together', () => {
    expect(problemsOf({ PORT: 'x' }, file('  h: { path: h, message_handlers: { "*": chat } }\n'))).toEqual([
      'PORT: "x" is not a port (0-65535)',
      'handlers.h.path: must start with "/"',
    ]);
  });

  it.each([
    [
      'invalid YAML',
      'a: [',
      [
        'GATEWAY_CONFIG: invalid YAML: Flow sequence in block collection must be sufficiently indented and end with a ] at line 1, column 5:',
      ],
    ],
    [
      'duplicate YAML keys',
      `${DESTS}${DESTS}handlers:\n${CHAT}`,
      ['GATEWAY_CONFIG: invalid YAML: Map keys must be unique at line 2, column 1:'],
    ],
    ['an empty file', '', ['GATEWAY_CONFIG: must be a YAML mapping with "destinations" and "handlers"']],
    ['a list', '- a', ['GATEWAY_CONFIG: must be a YAML mapping with "destinations" and "handlers"']],
    [
      'an unknown top-level key',
      `${file(CHAT)}extra: 1\n`,
      ['extra: is not allowed (allowed: destinations, handlers)'],
    ],
    [
      'an unknown destination key',
      file(CHAT, 'destinations: { chat: { url: "http://chat.test", retries: 3 } }\n'),
      [
        'destinations.chat.retries: is not allowed (allowed: url, timeout, max_sockets, queue_limit, request_id_header, override_host_header)',
      ],
    ],
    [
      'an unknown handler key',
      file('  chat1: { path: /c, message_handlers: { "*": chat }, origin: x }\n'),
      ['handlers.chat1.origin: is not allowed (allowed: path, message_handlers)'],
    ],
    [
      'no destinations',
      `handlers:\n${CHAT}`,
      [
        'destinations: is required',
        'handlers.chat1.message_handlers["*"]: destination "chat" is not defined (defined: none)',
      ],
    ],
    [
      'empty destinations',
      file(CHAT, 'destinations: {}\n'),
      [
        'destinations: must define at least one destination',
        'handlers.chat1.message_handlers["*"]: destination "chat" is not defined (defined: none)',
      ],
    ],
    ['no handlers', DESTS, ['handlers: is required']],
    ['empty handlers', `${DESTS}handlers: {}\n`, ['handlers: must define at least one handler']],
    [
      'a destination without url',
      file(CHAT, 'destinations: { chat: { timeout: 5s } }\n'),
      ['destinations.chat.url: is required'],
    ],
    [
      'a url that is not http or https',
      file(CHAT, 'destinations: { chat: { url: "ws://chat.test" } }\n'),
      ['destinations.chat.url: "ws://chat.test" is not an http or https URL'],
    ],
    [
      'a url with credentials',
      file(CHAT, 'destinations: { chat: { url: "http://u:pw@chat.test" } }\n'),
      ['destinations.chat.url: <redacted> must not hold credentials, a query or a fragment'],
    ],
    [
      'a destination that is not a mapping',
      file(CHAT, 'destinations: { chat: "http://chat.test" }\n'),
      ['destinations.chat: must be a mapping'],
    ],
    [
      'a numeric timeout',
      file(CHAT, 'destinations: { chat: { url: "http://chat.test", timeout: 30 } }\n'),
      ['destinations.chat.timeout: 30 is not a duration (examples: "30s", "2m")'],
    ],
    [
      'a bad max_sockets',
      file(CHAT, 'destinations: { chat: { url: "http://chat.test", max_sockets: many } }\n'),
      ['destinations.chat.max_sockets: "many" is not a whole number >= 1'],
    ],
    [
      'a bad destination name',
      file(
        '  chat1: { path: /c, message_handlers: { "*": "chat.1" } }\n',
        'destinations: { chat.1: { url: "http://chat.test" } }\n',
      ),
      ['destinations["chat.1"]: is not a valid name (allowed: A-Z, a-z, 0-9, _, -)'],
    ],
    [
      'a bad handler name',
      file('  "chat 1": { path: /c, message_handlers: { "*": chat } }\n'),
      ['handlers["chat 1"]: is not a valid name (allowed: A-Z, a-z, 0-9, _, -)'],
    ],
    [
      'a path without "/"',
      file('  chat1: { path: chat1, message_handlers: { "*": chat } }\n'),
      ['handlers.chat1.path: must start with "/"'],
    ],
    [
      'a handler without path',
      file('  chat1: { message_handlers: { "*": chat } }\n'),
      ['handlers.chat1.path: is required'],
    ],
    [
      'a handler without message_handlers',
      file('  chat1: { path: /c }\n'),
      ['handlers.chat1.message_handlers: is required'],
    ],
    [
      'duplicate handler paths',
      file(`${CHAT}  chat2: { path: /chat1, message_handlers: { "*": chat } }\n`),
      ['handlers.chat2.path: "/chat1" is already used by handlers.chat1'],
    ],
    [
      'no "*" pattern',
      file('  chat1: { path: /c, message_handlers: { "gateway.*": chat } }\n'),
      ['handlers.chat1.message_handlers: must contain the "*" pattern'],
    ],
    [
      'an unknown destination',
      file('  chat1: { path: /c, message_handlers: { "*": chat, "gateway.*": auth/x } }\n'),
      ['handlers.chat1.message_handlers["gateway.*"]: destination "auth" is not defined (defined: chat)'],
    ],
    [
      'a bad pattern',
      file('  chat1: { path: /c, message_handlers: { "*": chat, "a..b": chat, "a.*.b": chat } }\n'),
      [
        'handlers.chat1.message_handlers["a..b"]: is not a valid pattern (allowed: "*", "<prefix>.*" or an exact method name)',
        'handlers.chat1.message_handlers["a.*.b"]: is not a valid pattern (allowed: "*", "<prefix>.*" or an exact method name)',
      ],
    ],
    [
      'a target that is not a string',
      file('  chat1: { path: /c, message_handlers: { "*": [chat] } }\n'),
      ['handlers.chat1.message_handlers["*"]: must be a string "<destination>/<path-prefix>"'],
    ],
    [
      'a path prefix with a query',
      file('  chat1: { path: /c, message_handlers: { "*": "chat/a?b" } }\n'),
      ['handlers.chat1.message_handlers["*"]: path prefix "/a?b" must not contain spaces, "?" or "#"'],
    ],
  ])('rejects %s', (_what, text, expected) => {
    expect(problemsOf({}, text)).toEqual(expected);
  });
});
