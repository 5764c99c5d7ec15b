/**
 * JSON text of a value that came out of `JSON.parse`. V8's JSON.stringify
 * recurses and overflows a few thousand levels deep, while JSON.parse does
 * not: a batch command body that parsed must encode too, as a single
 * publish's raw bytes would be forwarded. The iterative encoder runs only then.
 */
export function jsonText(value: unknown): string {
  try {
    return JSON.stringify(value);
  } catch (err) {
    if (!(err instanceof RangeError)) throw err;
    return deepJsonText(value);
  }
}

type Pending = { readonly text: string } | { readonly value: unknown };

function deepJsonText(root: unknown): string {
  let out = '';
  const stack: Pending[] = [{ value: root }];
  for (let next = stack.pop(); next !== undefined; next = stack.pop()) {
    if ('text' in next) {
      out += next.text;
      continue;
    }
    const value = next.value;
    if (typeof value !== 'object' || value === null) {
      out += JSON.stringify(value);
      continue;
    }
    const isArray = Array.isArray(value);
    const entries = isArray
      ? value.map((item): Pending[] => [{ value: item }])
      : Object.entries(value).map(([k, v]): Pending[] => [{ text: JSON.stringify(k) + ':' }, { value: v }]);
    const parts: Pending[] = [{ text: isArray ? '[' : '{' }];
    entries.forEach((entry, i) => parts.push(...(i === 0 ? [] : [{ text: ',' }]), ...entry));
    parts.push({ text: isArray ? ']' : '}' });
    for (let i = parts.length - 1; i >= 0; i--) stack.push(parts[i]);
  }
  return out;
}
