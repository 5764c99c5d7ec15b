import type { INestApplication } from '@nestjs/common';
import { DocumentBuilder, OpenAPIObject, SwaggerModule } from '@nestjs/swagger';
import type { Request, Response } from 'express';
import { BackendApiModule } from './backend-api.module';
import { OPENAPI_SCHEMAS } from './openapi.schemas';

/** Where the document is served, on the internal listener only (SPEC §5). */
export const OPENAPI_PATH = '/openapi.json';
/** The internal listener at its defaults (BACKEND_API_HOST, BACKEND_API_PORT): a generated client's base URL. */
const DEFAULT_SERVER_URL = 'http://127.0.0.1:8081';

/**
 * The OpenAPI 3.1 description of /v1, generated from the backend API
 * controllers' decorators (openapi.decorators.ts) and the body schemas.
 */
export function openApiDocument(app: INestApplication, version: string): OpenAPIObject {
  const config = new DocumentBuilder()
    .setOpenAPIVersion('3.1.0')
    .setTitle('Lattice gateway backend API')
    .setDescription(
      'The backend API (`/v1`) of the gateway, on its internal listener (SPEC §5). Success is 204 with an empty body; ' +
        '404, 403 and 401 have empty bodies; 400 has `{"error", "message"}`. With BACKEND_API_TOKEN set, every /v1 request needs `Authorization: Bearer <token>`.',
    )
    .setVersion(version)
    .setLicense('MIT', 'https://opensource.org/licenses/MIT')
    .addServer(
      DEFAULT_SERVER_URL,
      'the internal listener at its defaults (BACKEND_API_HOST 127.0.0.1, BACKEND_API_PORT 8081)',
    )
    // Not addBearerAuth(): it declares `bearerFormat: "JWT"`, and the token is a plain shared secret.
    .addSecurity('bearer', {
      type: 'http',
      scheme: 'bearer',
      description: 'BACKEND_API_TOKEN, a shared secret sent as is (not a JWT); required when it is set',
    })
    .build();
  const document = SwaggerModule.createDocument(app, config, { include: [BackendApiModule] });
  return {
    ...document,
    components: { ...document.components, schemas: { ...document.components?.schemas, ...OPENAPI_SCHEMAS } },
  };
}

/** Serve `document` as GET /openapi.json (the Express instance is the internal listener's; the public one forwards only /health/*). */
export function serveOpenApi(app: INestApplication, document: OpenAPIObject): void {
  const text = JSON.stringify(document);
  app
    .getHttpAdapter()
    .get(OPENAPI_PATH, (_req: Request, res: Response) => void res.type('application/json').send(text));
}
