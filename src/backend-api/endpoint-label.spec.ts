import { endpointLabel } from './endpoint-label';

describe(endpointLabel.name, () => {
  it.each([
    ['PUT', '/v1/connection/c1/subscriptions/a/b', 'topic_subscribe'],
    ['DELETE', '/v1/connection/c1/subscriptions/a', 'topic_unsubscribe'],
    ['POST', '/v1/publish/a/b?x=1', 'publish'],
    ['PUT', '/v1/connection/c1/lattices/ns', 'lattice_subscribe'],
    ['DELETE', '/v1/connection/c1/lattices/ns', 'lattice_unsubscribe'],
    ['POST', '/v1/lattice/ns', 'lattice_update'],
    ['PUT', '/v1/connection/c1/users', 'users_subscribe'],
    ['DELETE', '/v1/connection/c1/users', 'users_unsubscribe'],
    ['PUT', '/v1/user/u/users', 'user_users'],
    ['DELETE', '/v1/connection/c1', 'connection_disconnect'],
    ['PUT', '/v1/connection/c1', 'unknown'],
    ['DELETE', '/v1/user/team:a/b/connections', 'user_disconnect'],
    ['PUT', '/v1/user/u/connections', 'user_users'],
    ['POST', '/v1/batch', 'batch'],
    ['GET', '/v1/connection/c1', 'connection_query'],
    ['GET', '/v1/user/team:a/b/connections', 'user_connections_query'],
    ['GET', '/v1/topic/a/b', 'topic_query'],
    ['PUT', '/v1/topic/a', 'unknown'],
    ['GET', '/v1/info', 'info_query'],
    ['GET', '/v1/info/x', 'unknown'],
    ['GET', '/v1/infox', 'unknown'],
    ['POST', '/v1/batch/x', 'unknown'],
    ['GET', '/vvvv', 'unknown'],
    ['PUT', '/v1/connection/c1/other', 'unknown'],
  ])('labels %s %s as %s', (method, path, label) => {
    expect(endpointLabel(method, path)).toBe(label);
  });
});
