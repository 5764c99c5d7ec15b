import { SetMap } from './set-map';

describe(SetMap.name, () => {
  let sut: SetMap<string, string>;
  beforeEach(() => (sut = new SetMap<string, string>()));

  const valuesOf = (key: string): string[] | undefined => {
    const values = sut.valuesOf(key);
    return values === undefined ? undefined : [...values];
  };

  it('holds a key with no value as absent', () => {
    expect(sut.has('k')).toBe(false);
    expect(sut.countOf('k')).toBe(0);
    expect(sut.valuesOf('k')).toBeUndefined();
    expect(sut.delete('k', 'a')).toBe(false);
    expect(sut.size).toBe(0);
  });

  it('goes from one value to several and back, in the order added', () => {
    expect(sut.add('k', 'a')).toBe(true);
    expect(valuesOf('k')).toEqual(['a']);
    expect(sut.add('k', 'b')).toBe(true);
    expect(sut.add('k', 'c')).toBe(true);
    expect(valuesOf('k')).toEqual(['a', 'b', 'c']);
    expect(sut.countOf('k')).toBe(3);
    expect(sut.delete('k', 'b')).toBe(true);
    expect(sut.delete('k', 'a')).toBe(true);
    expect(valuesOf('k')).toEqual(['c']);
    expect(sut.add('k', 'd')).toBe(true);
    expect(valuesOf('k')).toEqual(['c', 'd']);
    expect(sut.delete('k', 'c')).toBe(true);
    expect(sut.delete('k', 'd')).toBe(true);
    expect(sut.has('k')).toBe(false);
    expect(sut.size).toBe(0);
  });

  it('reports a repeated add and a delete of what is not there as no change, in both forms', () => {
    sut.add('k', 'a');
    expect(sut.add('k', 'a')).toBe(false);
    expect(sut.delete('k', 'x')).toBe(false);
    sut.add('k', 'b');
    expect(sut.add('k', 'b')).toBe(false);
    expect(sut.delete('k', 'x')).toBe(false);
    expect(sut.countOf('k')).toBe(2);
  });

  it('keeps keys apart', () => {
    sut.add('k1', 'a');
    sut.add('k2', 'a');
    sut.add('k2', 'b');
    expect(sut.size).toBe(2);
    sut.delete('k2', 'a');
    expect(valuesOf('k1')).toEqual(['a']);
    expect(valuesOf('k2')).toEqual(['b']);
  });

  it('lets a fan-out loop delete the value it is visiting (a slow consumer closed mid-loop)', () => {
    for (const value of ['a', 'b', 'c']) sut.add('k', value);
    const seen: string[] = [];
    for (const value of sut.valuesOf('k')!) {
      seen.push(value);
      sut.delete('k', value);
    }
    expect(seen).toEqual(['a', 'b', 'c']);
    expect(sut.has('k')).toBe(false);
  });
});
