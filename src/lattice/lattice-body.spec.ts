import { parseLatticeBody, type LatticeBody } from './lattice-body';

const LONG_KEY = 'k'.repeat(257);
const MAX_KEY = 'k'.repeat(256);
const KEY_FORM = 'key must match [A-Za-z0-9:_.-]{1,256}';
const USER_ID_FORM = 'user id must match [A-Za-z0-9:_/-]{1,256}';
const COUNTER = 'must be a non-negative safe integer';
const DURATION_EXAMPLES = '(examples: "10s", "90 minutes")';

function errorOf(body: unknown): string {
  const result = parseLatticeBody(body);
  if (result.ok) throw new Error('expected the body to be rejected');
  return result.message;
}

function valueOf(body: unknown): LatticeBody {
  const result = parseLatticeBody(body);
  if (!result.ok) throw new Error(`expected the body to be accepted: ${result.message}`);
  return result.value;
}

describe(parseLatticeBody.name, () => {
  it.each<[string, unknown, string]>([
    ['a null body', null, 'body: must be a JSON object'],
    ['an array body', [], 'body: must be a JSON object'],
    ['a string body', 'x', 'body: must be a JSON object'],
    ['a number body', 1, 'body: must be a JSON object'],
    ['shared that is an array', { shared: [] }, 'shared: must be a JSON object'],
    ['shared that is null', { shared: null }, 'shared: must be a JSON object'],
    ['private that is a string', { private: 'u' }, 'private: must be a JSON object'],
    ['private that is an array', { private: [{}] }, 'private: must be a JSON object'],
    ['a shared key with a space', { shared: { 'a b': {} } }, `shared."a b": ${KEY_FORM}`],
    ['a shared key with a slash', { shared: { 'a/b': {} } }, `shared."a/b": ${KEY_FORM}`],
    ['an empty shared key', { shared: { '': {} } }, `shared."": ${KEY_FORM}`],
    ['a shared key of 257 chars', { shared: { [LONG_KEY]: {} } }, `shared."${'k'.repeat(64)}…": ${KEY_FORM}`],
    ['a shared entry that is not an object', { shared: { room: 5 } }, 'shared.room: must be a JSON object'],
    ['a shared entry that is an array', { shared: { room: [] } }, 'shared.room: must be a JSON object'],
    ['a user id with a dot', { private: { 'u.1': {} } }, `private."u.1": ${USER_ID_FORM}`],
    ['an empty user id', { private: { '': {} } }, `private."": ${USER_ID_FORM}`],
    ['a user id of 257 chars', { private: { ['u'.repeat(257)]: {} } }, `private."${'u'.repeat(64)}…": ${USER_ID_FORM}`],
    ['a user value that is not an object', { private: { u: 1 } }, 'private.u: must be a JSON object'],
    ['a private key with a bad char', { private: { u: { 'r#1': {} } } }, `private.u."r#1": ${KEY_FORM}`],
    [
      'a private entry that is not an object',
      { private: { u: { room: true } } },
      'private.u.room: must be a JSON object',
    ],
    [
      "expires_in beside a user's keys",
      { private: { u: { expires_in: '10s' } } },
      'private.u.expires_in: must be a JSON object',
    ],
    [
      'a variable name without suffix',
      { shared: { room: { last: 1 } } },
      'shared.room."last": invalid variable name, expected <name>_counter, <name>_set or <name>_register, <name> matching [A-Za-z_][A-Za-z0-9_]*',
    ],
    [
      'a variable with an unknown suffix',
      { shared: { room: { x_map: {} } } },
      'shared.room."x_map": invalid variable name, expected <name>_counter, <name>_set or <name>_register, <name> matching [A-Za-z_][A-Za-z0-9_]*',
    ],
    [
      'a variable name starting with a digit',
      { private: { u: { r: { '1x_set': [] } } } },
      'private.u.r."1x_set": invalid variable name, expected <name>_counter, <name>_set or <name>_register, <name> matching [A-Za-z_][A-Za-z0-9_]*',
    ],
    ['a negative counter', { shared: { room: { n_counter: -1 } } }, `shared.room.n_counter: ${COUNTER}`],
    [
      'a float counter',
      { private: { user1: { room1: { last_seen_counter: 1.5 } } } },
      `private.user1.room1.last_seen_counter: ${COUNTER}`,
    ],
    ['a string counter', { shared: { room: { n_counter: '5' } } }, `shared.room.n_counter: ${COUNTER}`],
    ['an unsafe counter', { shared: { room: { n_counter: 2 ** 53 } } }, `shared.room.n_counter: ${COUNTER}`],
    [
      'a set with a number',
      { shared: { room: { s_set: ['a', 1] } } },
      'shared.room.s_set: must be an array of strings',
    ],
    ['a set that is a string', { shared: { room: { s_set: 'a' } } }, 'shared.room.s_set: must be an array of strings'],
    [
      'a register that is not a pair',
      { shared: { room: { r_register: [1] } } },
      'shared.room.r_register: must be a [version, value] pair',
    ],
    [
      'a register that is an object',
      { shared: { room: { r_register: { v: 1 } } } },
      'shared.room.r_register: must be a [version, value] pair',
    ],
    [
      'a register with a negative version',
      { shared: { room: { r_register: [-1, 'x'] } } },
      'shared.room.r_register: version must be a finite number >= 0',
    ],
    [
      'a register with a null (NaN-like) version',
      { shared: { room: { r_register: [null, 'x'] } } },
      'shared.room.r_register: version must be a finite number >= 0',
    ],
    [
      'a register with a NaN version',
      { shared: { room: { r_register: [Number.NaN, 'x'] } } },
      'shared.room.r_register: version must be a finite number >= 0',
    ],
    [
      'expires_in under shared',
      { shared: { room: { expires_in: '10s' } } },
      'shared.room.expires_in: allowed only inside a private entry',
    ],
    [
      'a numeric expires_in',
      { private: { u: { room: { expires_in: 10 } } } },
      'private.u.room.expires_in: must be a duration string such as "10s" or "90 minutes"',
    ],
    [
      'a null expires_in',
      { private: { u: { room: { expires_in: null } } } },
      'private.u.room.expires_in: must be a duration string such as "10s" or "90 minutes"',
    ],
    [
      'an unparsable expires_in',
      { private: { u: { room: { expires_in: 'soon' } } } },
      `private.u.room.expires_in: "soon" is not a positive duration ${DURATION_EXAMPLES}`,
    ],
    [
      'an empty expires_in',
      { private: { u: { room: { expires_in: '' } } } },
      `private.u.room.expires_in: "" is not a positive duration ${DURATION_EXAMPLES}`,
    ],
    [
      'a zero expires_in',
      { private: { u: { room: { expires_in: '0s' } } } },
      `private.u.room.expires_in: "0s" is not a positive duration ${DURATION_EXAMPLES}`,
    ],
    [
      'a negative expires_in',
      { private: { u: { room: { expires_in: '-5s' } } } },
      `private.u.room.expires_in: "-5s" is not a positive duration ${DURATION_EXAMPLES}`,
    ],
    [
      'an infinite expires_in',
      { private: { u: { room: { expires_in: '1e400s' } } } },
      `private.u.room.expires_in: "1e400s" is not a positive duration ${DURATION_EXAMPLES}`,
    ],
    [
      'an expires_in with a trailing word',
      { private: { u: { room: { expires_in: '10s banana' } } } },
      `private.u.room.expires_in: "10s banana" is not a positive duration ${DURATION_EXAMPLES}`,
    ],
    [
      'a zero "0" expires_in',
      { private: { u: { room: { expires_in: '0' } } } },
      `private.u.room.expires_in: "0" is not a positive duration ${DURATION_EXAMPLES}`,
    ],
    [
      'an expires_in under 1 ms',
      { private: { u: { room: { expires_in: '100us' } } } },
      `private.u.room.expires_in: "100us" is not a positive duration ${DURATION_EXAMPLES}`,
    ],
    [
      'a 65-character expires_in',
      { private: { u: { room: { expires_in: '0'.repeat(63) + '1s' } } } },
      'private.u.room.expires_in: must be at most 64 characters',
    ],
    [
      'a 1 MiB expires_in',
      { private: { u: { room: { expires_in: '1'.repeat(1024 * 1024) + 's' } } } },
      'private.u.room.expires_in: must be at most 64 characters',
    ],
  ])('rejects %s', (_case, body, message) => {
    expect(errorOf(body)).toBe(message);
  });

  it.each<[string, unknown]>([
    ['an empty object', {}],
    ['empty sections', { shared: {}, private: {} }],
    ['unknown top-level keys beside the sections', { shared: {}, version: 2, expires_in: 'x' }],
    ['a key of 256 chars', { shared: { [MAX_KEY]: {} } }],
    ['keys with every allowed char', { shared: { 'aZ09:_.-': {} }, private: { 'u:1/a_b-c': { 'aZ09:_.-': {} } } }],
  ])('accepts %s', (_case, body) => {
    expect(parseLatticeBody(body).ok).toBe(true);
  });

  it('reads shared and private variables of every kind', () => {
    const sut = valueOf(
      JSON.parse(
        '{"shared":{"room":{"last_message_counter":100,"members_set":["a"],"topic_register":[1,{"t":"x"}]}},' +
          '"private":{"u1":{"room":{"last_seen_counter":99}}}}',
      ),
    );

    expect(sut.shared).toEqual(
      new Map([
        [
          'room',
          new Map<string, unknown>([
            ['last_message_counter', 100],
            ['members_set', ['a']],
            ['topic_register', [1, { t: 'x' }]],
          ]),
        ],
      ]),
    );
    expect(sut.private).toEqual(
      new Map([
        ['u1', new Map([['room', { variables: new Map([['last_seen_counter', 99]]), expiresInMs: undefined }]])],
      ]),
    );
  });

  it('keeps expires_in as milliseconds and out of the variables', () => {
    const sut = valueOf({ private: { u: { room: { expires_in: '90 minutes', n_counter: 1 } } } });

    expect(sut.private.get('u')?.get('room')).toEqual({
      variables: new Map([['n_counter', 1]]),
      expiresInMs: 90 * 60 * 1000,
    });
  });

  it('keeps an empty private entry, which grants access', () => {
    const sut = valueOf({ private: { u: { room: {} } } });

    expect(sut.private.get('u')?.get('room')).toEqual({ variables: new Map(), expiresInMs: undefined });
  });

  it('treats absent sections as empty', () => {
    const sut = valueOf({});

    expect(sut.shared.size).toBe(0);
    expect(sut.private.size).toBe(0);
  });

  it('keeps a key named __proto__ as data', () => {
    const sut = valueOf(JSON.parse('{"shared":{"__proto__":{"__proto___counter":3}}}'));

    expect(sut.shared.get('__proto__')?.get('__proto___counter')).toBe(3);
  });

  it.each([
    ['10s', 10_000],
    ['10 seconds', 10_000],
    ['1.5h', 5_400_000],
  ])('reads expires_in %j as %d ms', (text, ms) => {
    expect(
      valueOf({ private: { u: { room: { expires_in: text } } } })
        .private.get('u')
        ?.get('room')?.expiresInMs,
    ).toBe(ms);
  });
});
