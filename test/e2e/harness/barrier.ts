import { WsClient } from './ws-client';

let barriers = 0;

/**
 * "Nothing arrives" (STYLE B10 ordering barrier): the gateway wrote every
 * frame due to an earlier backend call before answering it, so the reply to a
 * `test.barrier` call made now must be the client's next frame: the
 * connection is open and nothing else arrived before it (the fake upstream's
 * default route answers the call).
 */
export async function expectNothingMore(client: WsClient): Promise<void> {
  const requestId = `barrier-${++barriers}`;
  expect(await client.call('test.barrier', { request_id: requestId })).toEqual([
    'result',
    { request_id: requestId },
    { args: [], kwargs: {} },
  ]);
}
