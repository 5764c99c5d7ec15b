// Validates Kubernetes objects against the official OpenAPI schemas compiled into the
// kubernetes-models package (ESM only, so it runs in its own node process; see
// kubernetes.e2e-spec.ts). Reads a JSON array of objects on stdin, prints a JSON array
// of { kind, name, error } (error null when valid).
import { readFileSync } from 'node:fs';

const objects = JSON.parse(readFileSync(0, 'utf8'));
const results = [];
for (const object of objects) {
  const name = object?.metadata?.name ?? '?';
  // apiVersion "apps/v1" → kubernetes-models/apps/v1/Deployment; "v1" → kubernetes-models/v1/Service.
  const modulePath = `kubernetes-models/${object.apiVersion}/${object.kind}`;
  let error = null;
  try {
    const model = await import(modulePath);
    new model[object.kind](object).validate();
  } catch (err) {
    error =
      err?.code === 'ERR_MODULE_NOT_FOUND' || err?.code === 'ERR_PACKAGE_PATH_NOT_EXPORTED'
        ? `no schema for ${object.apiVersion} ${object.kind}`
        : String(err?.message ?? err);
  }
  results.push({ kind: object.kind, name, error });
}
process.stdout.write(JSON.stringify(results));
