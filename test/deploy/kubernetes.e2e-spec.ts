import { execFileSync } from 'node:child_process';
import { readFileSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import { parseAllDocuments } from 'yaml';
import { loadConfig } from '../../src/config/load-config';
import { TEST_REDIS_URL, randomPrefix } from '../e2e/harness/cluster';
import { TestGateway, startTestGateway } from '../e2e/harness/gateway';

/**
 * deploy/kubernetes (issue 21): every object validates against the official
 * Kubernetes schemas (kubernetes-models), and the manifests agree with the
 * gateway: ports, probe routes, grace period, secrets, selectors.
 */
const DIR = join(__dirname, '../../deploy/kubernetes');

type Manifest = any;

function readManifests(): { file: string; object: Manifest }[] {
  return readdirSync(DIR)
    .filter((file) => file.endsWith('.yaml') && file !== 'kustomization.yaml')
    .flatMap((file) =>
      parseAllDocuments(readFileSync(join(DIR, file), 'utf8')).map((doc) => ({ file, object: doc.toJS() })),
    );
}

/** Runs the ESM-only validator in its own process: [{ kind, name, error }]. */
function validate(objects: Manifest[]): { kind: string; name: string; error: string | null }[] {
  const out = execFileSync(process.execPath, [join(__dirname, 'validate-kubernetes.mjs')], {
    input: JSON.stringify(objects),
    encoding: 'utf8',
  });
  return JSON.parse(out);
}

const manifests = readManifests();
const find = (kind: string, name?: string): Manifest => {
  const found = manifests.filter(
    (m) => m.object.kind === kind && (name === undefined || m.object.metadata.name === name),
  );
  if (found.length !== 1) throw new Error(`expected one ${kind} ${name ?? ''}, found ${found.length}`);
  return found[0].object;
};
const deployment = find('Deployment');
const pod = deployment.spec.template;
const container = pod.spec.containers[0];
const configMap = find('ConfigMap');
const secret = find('Secret');
const manifestEnv: Record<string, string> = { ...configMap.data, ...secret.stringData };
const containerPort = (name: string): number => container.ports.find((p: Manifest) => p.name === name).containerPort;
const matches = (selector: Record<string, string>, labels: Record<string, string>): boolean =>
  Object.entries(selector).every(([key, value]) => labels[key] === value);

describe('deploy/kubernetes', () => {
  it('every object validates against the Kubernetes schemas', () => {
    const results = validate(manifests.map((m) => m.object));
    expect(results.filter((r) => r.error !== null)).toEqual([]);
    expect(results.map((r) => r.kind).sort()).toEqual([
      'ConfigMap',
      'Deployment',
      'NetworkPolicy',
      'PodDisruptionBudget',
      'Secret',
      'Service',
      'Service',
    ]);
  });

  it('the validator rejects an object that breaks the schema (it really validates)', () => {
    const broken = structuredClone(deployment);
    broken.spec.replicas = 'three';
    broken.spec.template.spec.containers[0].ports[0].containerPort = 'http';
    const [result] = validate([broken]);
    expect(result.error).toMatch(/replicas must be integer/);
    expect(result.error).toMatch(/containerPort must be integer/);
  });

  it('kustomization.yaml lists every manifest and nothing else', () => {
    const kustomization = parseAllDocuments(readFileSync(join(DIR, 'kustomization.yaml'), 'utf8'))[0].toJS();
    expect([...kustomization.resources].sort()).toEqual([...new Set(manifests.map((m) => m.file))].sort());
  });

  it('the ConfigMap and Secret are a valid cluster-mode configuration whose ports are the containers', () => {
    const config = loadConfig(manifestEnv);
    expect(config.redisUrl).not.toBeNull();
    expect(config.backendApiToken).not.toBeNull();
    expect(config.listeners.public.port).toBe(containerPort('http'));
    expect(config.listeners.internal.port).toBe(containerPort('internal'));
    // Reachable from the internal Service and Prometheus.
    expect(config.listeners.internal.host).toBe('0.0.0.0');
    // The defaults (README) are the manifest's ports.
    const defaults = loadConfig({ UPSTREAM_URL: 'http://backend:8000' });
    expect([defaults.listeners.public.port, defaults.listeners.internal.port]).toEqual([8080, 8081]);
  });

  it('secrets live in the Secret only', () => {
    expect(Object.keys(secret.stringData).sort()).toEqual(['BACKEND_API_TOKEN', 'REDIS_URL']);
    expect(Object.keys(configMap.data)).not.toEqual(expect.arrayContaining(['BACKEND_API_TOKEN']));
    expect(Object.keys(configMap.data)).not.toEqual(expect.arrayContaining(['REDIS_URL']));
    expect(container.envFrom).toEqual([
      { configMapRef: { name: configMap.metadata.name } },
      { secretRef: { name: secret.metadata.name } },
    ]);
  });

  it('terminationGracePeriodSeconds exceeds the preStop sleep, SHUTDOWN_GRACE and the close handshake', () => {
    const preStop = container.lifecycle.preStop.exec.command;
    expect(preStop[0]).toBe('sleep');
    const preStopSeconds = Number(preStop[1]);
    const graceSeconds = loadConfig(manifestEnv).shutdownGraceMs / 1000;
    expect(preStopSeconds).toBeGreaterThan(0);
    expect(pod.spec.terminationGracePeriodSeconds).toBeGreaterThan(preStopSeconds + graceSeconds + 1);
  });

  it('runs 3 non-root replicas on a read-only root filesystem with requests and limits', () => {
    expect(deployment.spec.replicas).toBe(3);
    expect(pod.spec.securityContext.runAsNonRoot).toBe(true);
    expect(container.securityContext).toMatchObject({
      readOnlyRootFilesystem: true,
      allowPrivilegeEscalation: false,
      capabilities: { drop: ['ALL'] },
    });
    expect(container.resources.requests).toEqual({ cpu: expect.any(String), memory: expect.any(String) });
    expect(container.resources.limits.memory).toEqual(expect.any(String));
    expect(matches(deployment.spec.selector.matchLabels, pod.metadata.labels)).toBe(true);
  });

  it('the public Service exposes only the public port; the internal one is ClusterIP on the internal port', () => {
    const publicService = find('Service', 'lattice-gateway');
    const internalService = find('Service', 'lattice-gateway-internal');
    for (const service of [publicService, internalService])
      expect(matches(service.spec.selector, pod.metadata.labels)).toBe(true);
    expect(publicService.spec.ports.map((p: Manifest) => p.targetPort)).toEqual(['http']);
    expect(internalService.spec.type).toBe('ClusterIP');
    expect(internalService.spec.ports.map((p: Manifest) => p.targetPort)).toEqual(['internal']);
  });

  it('the NetworkPolicy lets only selected peers reach the internal port', () => {
    const policy = find('NetworkPolicy');
    expect(matches(policy.spec.podSelector.matchLabels, pod.metadata.labels)).toBe(true);
    expect(policy.spec.policyTypes).toContain('Ingress');
    const rulesOpening = (port: string) =>
      policy.spec.ingress.filter((rule: Manifest) =>
        rule.ports.some((p: Manifest) => p.port === port || p.port === containerPort(port)),
      );
    expect(rulesOpening('http')).toHaveLength(1);
    const internalRules = rulesOpening('internal');
    expect(internalRules).toHaveLength(1);
    // No rule with an empty or missing `from` opens the internal port to everyone.
    expect(internalRules[0].from.length).toBeGreaterThan(0);
    for (const peer of internalRules[0].from) expect(Object.keys(peer).length).toBeGreaterThan(0);
  });

  it('the PodDisruptionBudget selects the pods and always leaves some running', () => {
    const budget = find('PodDisruptionBudget');
    expect(matches(budget.spec.selector.matchLabels, pod.metadata.labels)).toBe(true);
    expect(budget.spec.maxUnavailable).toBeLessThan(deployment.spec.replicas);
  });

  describe('against the real gateway started with the manifest configuration', () => {
    let gateway: TestGateway;
    beforeAll(async () => {
      // Cluster mode as in the manifests, on the test Redis; ports as the harness binds them (0).
      const env: Record<string, string> = { ...manifestEnv, REDIS_URL: TEST_REDIS_URL, REDIS_PREFIX: randomPrefix() };
      for (const key of ['HOST', 'PORT', 'BACKEND_API_HOST', 'BACKEND_API_PORT', 'UPSTREAM_URL', 'NODE_OPTIONS'])
        delete env[key];
      gateway = await startTestGateway(env);
    });
    afterAll(() => gateway?.close());

    const listenerUrl = (portName: string): string => {
      if (portName === 'http') return gateway.publicUrl;
      if (portName === 'internal') return gateway.apiUrl;
      throw new Error(`probe port ${portName} is not a listener`);
    };

    it.each(['startupProbe', 'livenessProbe', 'readinessProbe'])(
      'the %s answers 200 on the route and listener it names',
      async (probe) => {
        const { path, port } = container[probe].httpGet;
        const response = await fetch(listenerUrl(port) + path);
        expect(response.status).toBe(200);
      },
    );

    it('liveness and readiness use /health/live and /health/ready', () => {
      expect(container.livenessProbe.httpGet.path).toBe('/health/live');
      expect(container.readinessProbe.httpGet.path).toBe('/health/ready');
    });

    it('the scrape annotations name the internal port and a path that serves the gateway metrics', async () => {
      const annotations = pod.metadata.annotations;
      expect(annotations['prometheus.io/scrape']).toBe('true');
      expect(Number(annotations['prometheus.io/port'])).toBe(containerPort('internal'));
      const response = await fetch(gateway.apiUrl + annotations['prometheus.io/path']);
      expect(response.status).toBe(200);
      expect(await response.text()).toMatch(/^gateway_connections /m);
    });
  });
});
