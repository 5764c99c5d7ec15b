/** An environment variable name as shells and container runtimes write them. */
const VARIABLE_NAME = /^[A-Za-z_][A-Za-z0-9_]*$/;

/**
 * Warnings for environment variables that are not settings but look like a
 * misspelt one (`BACKEND_API_TOKN`, `REDIS_ULR`, `PING_INTREVAL`, `log_level`):
 * `<name>: is not a setting; did you mean <setting>?` (issue 20). Names are
 * compared upper-cased by optimal string alignment distance (a swap of two
 * neighbours counts once): at most 1 for settings of up to 7 characters, 2 for
 * longer ones, so that the usual neighbours of a container's environment
 * (`HOME`, `HOSTNAME`, `NODE_ENV`, `PWD`) never match. Pure; values are never read.
 */
export function settingTypoWarnings(names: Iterable<string>, settings: readonly string[]): string[] {
  const known = new Set(settings);
  const warnings: string[] = [];
  for (const name of names) {
    if (known.has(name) || !VARIABLE_NAME.test(name)) continue;
    const meant = closestSetting(name.toUpperCase(), settings);
    if (meant !== null) warnings.push(`${name}: is not a setting; did you mean ${meant}?`);
  }
  return warnings;
}

/**
 * The entry of `names` that `name` (compared as given) is probably a misspelling
 * of, by the same distance rule as the settings; null when none is close.
 */
export function closestName(name: string, names: readonly string[]): string | null {
  return closestSetting(name, names);
}

function closestSetting(name: string, settings: readonly string[]): string | null {
  let best: string | null = null;
  let bestDistance = Infinity;
  for (const setting of settings) {
    const allowed = setting.length >= 8 ? 2 : 1;
    if (Math.abs(setting.length - name.length) > allowed) continue;
    const distance = alignmentDistance(name, setting, allowed);
    if (distance <= allowed && distance < bestDistance) {
      best = setting;
      bestDistance = distance;
    }
  }
  return best;
}

/**
 * Optimal string alignment distance between `a` and `b` (insert, delete,
 * substitute, swap neighbours), or `limit + 1` as soon as it must exceed `limit`.
 */
export function alignmentDistance(a: string, b: string, limit: number): number {
  let before: number[] = [];
  let previous = Array.from({ length: b.length + 1 }, (_, j) => j);
  for (let i = 1; i <= a.length; i++) {
    const current = [i];
    let rowMin = i;
    for (let j = 1; j <= b.length; j++) {
      const cost = a[i - 1] === b[j - 1] ? 0 : 1;
      let value = Math.min(previous[j] + 1, current[j - 1] + 1, previous[j - 1] + cost);
      if (i > 1 && j > 1 && a[i - 1] === b[j - 2] && a[i - 2] === b[j - 1]) value = Math.min(value, before[j - 2] + 1);
      current.push(value);
      rowMin = Math.min(rowMin, value);
    }
    if (rowMin > limit) return limit + 1;
    before = previous;
    previous = current;
  }
  return previous[b.length];
}
