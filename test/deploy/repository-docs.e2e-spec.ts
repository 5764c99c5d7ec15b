import { execFileSync } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';

/**
 * Repository hygiene (issue 21): the documentation's relative links resolve
 * inside a clone of this repository, and the licence and changelog an
 * operator looks for are there.
 */
const ROOT = join(__dirname, '../..');
const markdownFiles = execFileSync('git', ['ls-files', '*.md', '**/*.md'], { cwd: ROOT, encoding: 'utf8' })
  .split('\n')
  .filter((file) => file !== '' && existsSync(join(ROOT, file)));

/** Relative link targets of a Markdown file (code spans and fenced blocks left out). */
function relativeLinks(file: string): string[] {
  const text = readFileSync(join(ROOT, file), 'utf8').replace(/```[\s\S]*?```/g, '');
  return [...text.matchAll(/\]\(([^)\s]+)\)/g)].map((m) => m[1]).filter((target) => !/^([a-z]+:|#)/i.test(target));
}

/** The copies in docs/ of the documents beside the project (../shared), and the edits that make their links work here. */
const SHARED = join(ROOT, '..', 'shared');
const COPIES: ReadonlyArray<[string, string, ReadonlyArray<[string, string]>]> = [
  [
    'docs/protocol.md',
    'SPEC.md',
    [
      ['`seed.md` ([`protocol-seed.md`](protocol-seed.md) in this repository)', '`seed.md` (beside this file)'],
      ['are in [`cluster.md`](cluster.md).', 'are in `CLUSTER.md` beside this file.'],
    ],
  ],
  ['docs/protocol-seed.md', 'seed.md', []],
  ['docs/STYLE.md', 'STYLE.md', []],
];

/** A copy without its leading HTML comment, its link edits undone: the original's text. */
function originalOf(copy: string, edits: ReadonlyArray<[string, string]>): string {
  let text = readFileSync(join(ROOT, copy), 'utf8').replace(/^<!--[\s\S]*?-->\n/, '');
  for (const [here, there] of edits) text = text.split(here).join(there);
  return text;
}

describe('repository documentation', () => {
  // The copies drift when the specification changes: this fails until they are refreshed.
  // ../shared is beside the project on every developer's machine and in CI; a clone elsewhere skips these rows.
  const copyRows = existsSync(SHARED) ? it.each(COPIES) : it.skip.each(COPIES);
  copyRows('%s is the current text of ../shared/%s', (copy, original, edits) => {
    expect(originalOf(copy, edits)).toBe(readFileSync(join(SHARED, original), 'utf8'));
  });

  it('finds the Markdown files', () => {
    expect(markdownFiles).toEqual(
      expect.arrayContaining(['README.md', 'CHANGELOG.md', 'docs/protocol.md', 'docs/operations.md']),
    );
  });

  it.each(markdownFiles)('%s links only to files inside the repository that exist', (file) => {
    const broken = relativeLinks(file).filter((target) => {
      const path = resolve(dirname(join(ROOT, file)), decodeURIComponent(target.split('#')[0]));
      return relative(ROOT, path).startsWith('..') || !existsSync(path);
    });
    expect(broken).toEqual([]);
  });

  it('the licence is MIT in LICENSE and in both package.json files', () => {
    expect(readFileSync(join(ROOT, 'LICENSE'), 'utf8')).toMatch(/^MIT License/);
    for (const manifest of ['package.json', 'client/package.json']) {
      expect(JSON.parse(readFileSync(join(ROOT, manifest), 'utf8')).license).toBe('MIT');
    }
  });

  it('CHANGELOG.md follows Keep a Changelog: Unreleased first, then versions with dates', () => {
    const headings = readFileSync(join(ROOT, 'CHANGELOG.md'), 'utf8').match(/^## .*$/gm) ?? [];
    expect(headings[0]).toBe('## [Unreleased]');
    for (const heading of headings.slice(1)) expect(heading).toMatch(/^## \[\d+\.\d+\.\d+\] - \d{4}-\d{2}-\d{2}$/);
    const version = JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')).version;
    expect(headings.some((heading) => heading.startsWith(`## [${version}]`))).toBe(true);
  });
});
