import { buildGateway } from './child-gateway';

/** e2e globalSetup: build dist/ once per run, before any worker starts (workers inherit the flag it sets). */
export default function globalSetup(): void {
  buildGateway(180_000);
}
