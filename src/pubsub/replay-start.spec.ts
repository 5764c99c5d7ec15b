import { replayStart } from './replay-start';

describe(replayStart.name, () => {
  const at = (offset: number, epoch: string | null) => ({ offset, epoch });

  it.each([
    ['no offer: the subscription position', undefined, at(5, 'e'), at(5, 'e')],
    ['an offer below the subscription, same epoch: the subscription position', at(0, 'e'), at(5, 'e'), at(5, 'e')],
    ['an offer just below the subscription: the subscription position', at(4, 'e'), at(5, 'e'), at(5, 'e')],
    ['an offer at the subscription: kept', at(5, 'e'), at(5, 'e'), at(5, 'e')],
    ['an offer after the subscription: kept', at(9, 'e'), at(5, 'e'), at(9, 'e')],
    [
      'an offer of another epoch: kept (that instance began later, or the topic is lost)',
      at(0, 'f'),
      at(5, 'e'),
      at(0, 'f'),
    ],
    ['a subscription before the topic had history: the offer is kept', at(0, 'e'), at(0, null), at(0, 'e')],
  ])('%s', (_, offered, subscribedAt, expected) => {
    expect(replayStart(offered, subscribedAt)).toEqual(expected);
  });
});
