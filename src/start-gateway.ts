import { Logger, LoggerService } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import { NestExpressApplication } from '@nestjs/platform-express';
import type { Server } from 'node:http';
import type { AddressInfo, Socket } from 'node:net';
import type { NextFunction, Request, Response } from 'express';
import { AppModule } from './app.module';
import { BackendApiEntryMiddleware } from './backend-api/backend-api-entry.middleware';
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
  const app = await NestFactory.create<NestExpressApplication>(AppModule.forRoot(config), {
    bodyParser: false, // /v1 bodies are parsed by our own pipe with SPEC limits and messages
    logger: logger ?? new JsonLogger(config.log.level, config.log.format),
    abortOnError: false,
  });
  Logger.overrideLogger(nestLevelsOf(config.log.level)); // makes Logger.isLevelEnabled answer
  app.disable('x-powered-by');
  // Ahead of Nest's router, which app.listen() adds: see BackendApiEntryMiddleware.
  const entry = app.get(BackendApiEntryMiddleware);
  app.use('/v1', (req: Request, res: Response, next: NextFunction) => entry.use(req, res, next));
  const publicListener = app.get(PublicListener);
  app.useWebSocketAdapter(new GatewayWsAdapter(app, publicListener.wss));
  const shutdown = app.get(ShutdownService);
  // stopAccepting() resolves once every public socket is gone, WebSockets included,
  // and those are closed only at the end of the drain: awaiting it there would
  // deadlock. The drain just starts it; close() awaits it after the clients.
  let publicClosed: Promise<void> = Promise.resolve();
  shutdown.onDrain(() => {
    publicClosed = publicListener.stopAccepting();
  });

  const internalServer = app.getHttpServer() as Server;
  applyListenerTimeouts(internalServer, config.listeners.timeouts);
  internalServer.on('clientError', (err: NodeJS.ErrnoException, socket: Socket) => endWithStatus(socket, clientErrorStatus(err)));
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
      publicListener.server.closeAllConnections(); // health requests still open
      await publicClosed;
      await app.close();
    })();
    return closing;
  };
  return { app, publicAddress, internalAddress, close };
}
