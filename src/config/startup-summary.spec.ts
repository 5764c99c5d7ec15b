import { loadConfig, loadConfigWithWarnings } from './load-config';
import { backendTokenWarning, handlerSummary } from './startup-summary';

describe('start-up summary', () => {
  it.each([
    'change-me',
    'CHANGE-ME',
    'changeme',
    'change-me-to-a-long-random-secret',
    'replace_me_please',
    'secret',
    'token',
    'password',
  ])('calls %s a placeholder', (token) => {
    expect(backendTokenWarning(token)).toMatch(/^BACKEND_API_TOKEN is a well-known placeholder: /);
  });

  it('names the length of a token shorter than 16 characters, never the token', () => {
    const warning = backendTokenWarning('abc123def456ghi');
    expect(warning).toMatch(/^BACKEND_API_TOKEN is shorter than 16 characters \(15\): /);
    expect(warning).not.toContain('abc123');
  });

  it('says nothing of no token or a token of 16 characters or more', () => {
    expect([backendTokenWarning(undefined), backendTokenWarning('abc123def456ghi7')]).toEqual([null, null]);
  });

  it('is one of the loader warnings', () => {
    const { warnings } = loadConfigWithWarnings({ UPSTREAM_URL: 'http://b:9000', BACKEND_API_TOKEN: 'change-me' });
    expect(warnings).toEqual([expect.stringMatching(/^BACKEND_API_TOKEN is a well-known placeholder/)]);
  });

  it('lists per WebSocket path the backend URLs of its routes, each once', () => {
    const file = `
destinations:
  chat: { url: "http://chat.internal:8000" }
  auth: { url: "http://auth.internal:8000" }
handlers:
  chat1:
    path: /chat1
    message_handlers:
      "*": chat/
      "rooms.*": chat/
      "gateway.*": auth/chat1
`;
    expect(handlerSummary(loadConfig({}, file))).toEqual([
      { path: '/chat1', upstream: ['http://chat.internal:8000', 'http://auth.internal:8000/chat1'] },
    ]);
  });
});
