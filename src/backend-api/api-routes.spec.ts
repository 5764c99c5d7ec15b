import { ROUTES, compileRoute } from './api-routes';

describe(compileRoute.name, () => {
  it.each([
    [ROUTES.publish, '/v1/publish/a/b', { topic: 'a/b' }],
    [ROUTES.publish, '/v1/publish/a%2Fb', { topic: 'a/b' }],
    [ROUTES.publish, '/v1/publish/a%3Ab', { topic: 'a:b' }],
    [ROUTES.publish, '/v1/publish', null],
    [ROUTES.publish, '/v1/PUBLISH/a', null],
    [ROUTES.publish, '/V1/publish/a', null],
    [ROUTES.publish, '/v1/publish/a%zz', undefined],
    [ROUTES.topicSubscription, '/v1/connection/c1/subscriptions/t/1', { cid: 'c1', topic: 't/1' }],
    [ROUTES.topicSubscription, '/v1/connection/c1/x/subscriptions/t', null],
    [ROUTES.usersSubscription, '/v1/connection/c1/users', { cid: 'c1' }],
    [ROUTES.usersSubscription, '/v1/connection/c1/users/x', null],
    [ROUTES.userUsers, '/v1/user/a/b/users', { uid: 'a/b' }],
    [ROUTES.userUsers, '/v1/user/a/users/users', { uid: 'a/users' }],
    [ROUTES.connection, '/v1/connection/c1', { cid: 'c1' }],
    [ROUTES.connection, '/v1/connection/c1/users', null],
    [ROUTES.userConnections, '/v1/user/a/b/connections', { uid: 'a/b' }],
    [ROUTES.userConnections, '/v1/user/a/users', null],
    [ROUTES.latticeUpdate, '/v1/lattice/ns/1', { namespace: 'ns/1' }],
    [ROUTES.batch, '/v1/batch', {}],
    [ROUTES.batch, '/v1/batchx', null],
  ])('matches %s against %s as %j', (template, path, expected) => {
    expect(compileRoute(template)(path)).toEqual(expected);
  });
});
