import { Logger, LoggerService } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import { ExpressAdapter, NestExpressApplication } from '@nestjs/platform-express';
import express from 'express';
import type { Server } from 'node:http';
import type { AddressInfo, Socket } from 'node:net';
import type { NextFunction, Request, Response } from 'express';
import { AppModule } from './app.module';
import { BackendApiEntryMiddleware } from './backend-api/backend-api-entry.middleware';
import { answerInFlight } from './backend-api/client-fault';
import { isBackendApiPath } from './backend-api/endpoint-label';
import { openApiDocument, serveOpenApi } from './backend-api/openapi-document';
import { GatewayConfig } from './config/gateway-config';
import { GatewayWsAdapter } from './gateway/gateway-ws.adapter';
import { answerConnect, applyListenerTimeouts, clientErrorStatus, endWithStatus } from './gateway/listener-guards';
import { PublicListener } from './gateway/public-listener';
import { ShutdownService } from './lifecycle/shutdown.service';
import { JsonLogger, nestLevelsOf } from './logging/json-logger';

/** A started gateway node. */
export interface RunningGateway {
  readonly app: NestExpressApplication;
  readonly publicAddress: AddressInfo;
  readonly internalAddress: AddressInfo;
  /** SPEC §10 drain, then stop both listeners. */
  close(): Promise<void>;
}

/**
 * Build the Nest app and open both listeners (SPEC §1). Used by main.ts and
 * by the e2e harness, so tests run exactly what production runs.
 */
export async function startGateway(config: GatewayConfig, logger?: LoggerService): Promise<RunningGateway> {
  const app = await NestFactory.create<NestExpressApplication>(
    AppModule.forRoot(config),
    new ExpressAdapter(exactRoutingExpress()),
    {
      bodyParser: false, // /v1 bodies are parsed by our own pipe with SPEC limits and messages
      logger: logger ?? new JsonLogger(config.log.level, config.log.format),
      abortOnError: false,
    },
  );
  Logger.overrideLogger(nestLevelsOf(config.log.level)); // makes Logger.isLevelEnabled answer
  app.disable('x-powered-by');
  // Ahead of Nest's router, which app.listen() adds: see BackendApiEntryMiddleware.
  const entry = app.get(BackendApiEntryMiddleware);
  // req.path: the request target's path (also of an absolute-form target), parsed once and cached for the router.
  app.use((req: Request, res: Response, next: NextFunction) =>
    isBackendApiPath(req.path) ? entry.use(req, res, next) : next(),
  );
  serveOpenApi(app, openApiDocument(app, config.version)); // SPEC §5: GET /openapi.json, internal listener
  const publicListener = app.get(PublicListener);
  app.useWebSocketAdapter(new GatewayWsAdapter(app, publicListener.wss));
  const shutdown = app.get(ShutdownService);
  // Draining: upgrades get 503, /health/ready answers 503 on both listeners until the end.
  shutdown.onDrain(() => publicListener.refuseUpgrades());

  const internalServer = app.getHttpServer() as Server;
  applyListenerTimeouts(internalServer, config.listeners.timeouts);
  internalServer.on('clientError', (err: NodeJS.ErrnoException, socket: Socket) => {
    const status = clientErrorStatus(err);
    // SPEC §5: in the middle of a /v1 request (a broken body), answer through it so it is counted.
    if (!answerInFlight(socket, status, err.code)) endWithStatus(socket, status);
  });
  internalServer.on('connect', answerConnect);
  await app.listen(config.listeners.internal.port, config.listeners.internal.host);
  const internalAddress = internalServer.address() as AddressInfo;
  publicListener.setHealthHandler(app.getHttpAdapter().getInstance());
  const publicAddress = await publicListener.listen(config.listeners.public.host, config.listeners.public.port);

  let closing: Promise<void> | null = null;
  const close = (): Promise<void> => {
    closing ??= (async () => {
      await shutdown.drain();
      await shutdown.awaitClientsGone();
      await publicListener.close(); // WebSockets are gone; health probes still open are cut
      await app.close();
    })();
    return closing;
  };
  return { app, publicAddress, internalAddress, close };
}

/**
 * SPEC §5: paths are matched exactly (case-sensitive, no trailing-slash folding).
 * Express reads these settings once, when its router is created, which
 * ExpressAdapter's constructor already does: so they are set on our own instance.
 */
function exactRoutingExpress(): express.Express {
  const instance = express();
  instance.set('case sensitive routing', true);
  instance.set('strict routing', true);
  return instance;
}
