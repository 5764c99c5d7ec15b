import { execFile } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { ENDPOINTS } from './backend-api-rows';
import { TestGateway, startTestGateway } from './harness/gateway';
import { within } from './harness/wait';

/**
 * SPEC §5 [ext], issue 12: GET /openapi.json on the internal listener is the
 * OpenAPI 3.1 description of /v1 generated from the controllers; its static
 * copy docs/openapi.json (written by `npm run openapi`) must equal it.
 */

const ROOT = join(__dirname, '..', '..');

/**
 * Validate `document` with @seriousme/openapi-schema-validator (the OpenAPI
 * 3.1 JSON Schema, with ajv). The package is ESM only, so it runs in a child
 * Node process rather than through jest's CommonJS loader.
 */
function validate(document: unknown): Promise<{ valid: boolean; version: string; errors?: unknown }> {
  const script = `
    import { Validator } from '@seriousme/openapi-schema-validator';
    let text = '';
    for await (const chunk of process.stdin) text += chunk;
    const validator = new Validator();
    const result = await validator.validate(JSON.parse(text));
    process.stdout.write(JSON.stringify({ valid: result.valid, version: validator.version, errors: result.errors }));`;
  const run = new Promise<string>((resolve, reject) => {
    const child = execFile(
      process.execPath,
      ['--input-type=module', '-e', script],
      { cwd: ROOT },
      (err, stdout, stderr) => (err ? reject(new Error(`${err.message}\n${stderr}`)) : resolve(stdout)),
    );
    child.stdin!.end(JSON.stringify(document));
  });
  return within(run, 'the OpenAPI validator', 15_000).then(
    (out) => JSON.parse(out) as { valid: boolean; version: string; errors?: unknown },
  );
}

/**
 * `redocly lint` (its built-in recommended rules) on docs/openapi.json, run
 * offline from node_modules (@redocly/cli is one bundled package), with its
 * telemetry off. Resolves the exit code and the JSON report.
 */
function redoclyLint(
  file: string,
): Promise<{ code: number; report: { totals: Record<string, number>; problems: unknown[] } }> {
  const cli = require.resolve('@redocly/cli/bin/cli.js', { paths: [ROOT] });
  const env = { PATH: process.env.PATH ?? '', REDOCLY_TELEMETRY: 'off', REDOCLY_SUPPRESS_UPDATE_NOTICE: 'true' };
  const run = new Promise<{ code: number; report: { totals: Record<string, number>; problems: unknown[] } }>(
    (resolve, reject) => {
      execFile(process.execPath, [cli, 'lint', file, '--format=json'], { cwd: ROOT, env }, (err, stdout, stderr) => {
        const code = err === null ? 0 : typeof err.code === 'number' ? err.code : -1;
        try {
          resolve({ code, report: JSON.parse(stdout) as { totals: Record<string, number>; problems: unknown[] } });
        } catch {
          reject(new Error(`redocly lint printed no JSON report (exit ${code}): ${stderr.slice(0, 500)}`));
        }
      });
    },
  );
  return within(run, 'redocly lint', 30_000);
}

describe('GET /openapi.json (SPEC §5)', () => {
  let t: TestGateway;
  let served: Record<string, unknown>;

  beforeAll(async () => {
    t = await startTestGateway({ BACKEND_API_TOKEN: 'secret' });
    const res = await fetch(t.apiUrl + '/openapi.json');
    expect({ status: res.status, type: res.headers.get('content-type') }).toEqual({
      status: 200,
      type: expect.stringMatching(/^application\/json/),
    });
    served = (await res.json()) as Record<string, unknown>;
  });
  afterAll(() => t.close());

  it('equals docs/openapi.json (regenerate it with `npm run openapi`)', () => {
    expect(served).toEqual(JSON.parse(readFileSync(join(ROOT, 'docs', 'openapi.json'), 'utf8')));
  });

  it('passes `redocly lint` with no error and no warning: a base URL in servers, a license, a bearer token that is no JWT (issue 20)', async () => {
    const { code, report } = await redoclyLint('docs/openapi.json');
    expect({ code, totals: report.totals, problems: report.problems }).toEqual({
      code: 0,
      totals: { errors: 0, warnings: 0, ignored: 0 },
      problems: [],
    });
    expect(served.servers).toEqual([expect.objectContaining({ url: 'http://127.0.0.1:8081' })]);
    expect((served.info as Record<string, unknown>).license).toMatchObject({ name: 'MIT' });
    const schemes = (served.components as { securitySchemes: Record<string, Record<string, unknown>> }).securitySchemes;
    expect(schemes.bearer).toMatchObject({ type: 'http', scheme: 'bearer' });
    expect(schemes.bearer.bearerFormat).toBeUndefined();
  }, 40_000);

  it('is a valid OpenAPI 3.1 document, and the validator does refuse a broken one', async () => {
    expect(served.openapi).toBe('3.1.0');
    expect(await validate(served)).toEqual({ valid: true, version: '3.1' });
    const broken = {
      ...served,
      paths: { '/v1/publish/{topic}': { post: { responses: { 204: { description: 1 } } } } },
    };
    expect((await validate(broken)).valid).toBe(false);
  });

  it('describes every /v1 endpoint and the batch, with their statuses', () => {
    const paths = served.paths as Record<
      string,
      Record<
        string,
        { responses: Record<string, unknown>; parameters?: Array<{ name: string; schema: { pattern: string } }> }
      >
    >;
    const operations = Object.entries(paths).flatMap(([path, methods]) =>
      Object.keys(methods).map((m) => `${m.toUpperCase()} ${path}`),
    );
    const toTemplate = (path: string): string =>
      path
        .replace(/connection\/[^/]+/, 'connection/{cid}')
        .replace(/subscriptions\/.*$/, 'subscriptions/{topic}')
        .replace(/lattices\/.*$/, 'lattices/{namespace}')
        .replace(/^\/v1\/publish\/.*$/, '/v1/publish/{topic}')
        .replace(/^\/v1\/lattice\/.*$/, '/v1/lattice/{namespace}')
        .replace(/^\/v1\/user\/.*\/(users|connections)$/, '/v1/user/{uid}/$1');
    const expected = [...ENDPOINTS.map((e) => `${e.method} ${toTemplate(e.path('c1'))}`), 'POST /v1/batch'];
    // SPEC §15.2: the GET queries, each with its answer and an example.
    const queries = [
      'GET /v1/connection/{cid}',
      'GET /v1/user/{uid}/connections',
      'GET /v1/topic/{topic}',
      'GET /v1/info',
    ];
    expect(operations.sort()).toEqual([...expected, ...queries].sort());
    for (const [path, methods] of Object.entries(paths)) {
      for (const [method, op] of Object.entries(methods)) {
        const statuses = Object.keys(op.responses);
        if (method === 'get') {
          const answer = op.responses['200'] as {
            content: { 'application/json': { schema: object; example: object } };
          };
          expect([path, statuses.includes('401'), typeof answer.content['application/json'].example]).toEqual([
            path,
            true,
            'object',
          ]);
          continue;
        }
        expect({
          op: `${method} ${path}`,
          has:
            ['400', '401', '413'].every((s) => statuses.includes(s)) &&
            (statuses.includes('204') || statuses.includes('200')),
        }).toEqual({ op: `${method} ${path}`, has: true });
        for (const param of op.parameters ?? [])
          expect({ op: `${method} ${path}`, param: param.name, pattern: typeof param.schema.pattern }).toEqual({
            op: `${method} ${path}`,
            param: param.name,
            pattern: 'string',
          });
      }
    }
    expect(Object.keys((served.components as { schemas: object }).schemas)).toEqual(
      expect.arrayContaining(['ApiError', 'LatticeContent', 'UserList', 'BatchRequest', 'BatchResponse']),
    );
  });

  it('is served on the internal listener only: the public listener answers 404', async () => {
    const res = await fetch(t.publicUrl + '/openapi.json');
    expect({ status: res.status }).toEqual({ status: 404 });
    await res.text();
  });
});
