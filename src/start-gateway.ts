import { LoggerService } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import { NestExpressApplication } from '@nestjs/platform-express';
import type { AddressInfo } from 'node:net';
import { AppModule } from './app.module';
import { GatewayConfig } from './config/gateway-config';
import { GatewayWsAdapter } from './gateway/gateway-ws.adapter';
import { PublicListener } from './gateway/public-listener';
import { ShutdownService } from './lifecycle/shutdown.service';
import { JsonLogger } from './logging/json-logger';

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
  app.disable('x-powered-by');
  const publicListener = app.get(PublicListener);
  app.useWebSocketAdapter(new GatewayWsAdapter(app, publicListener.wss));
  const shutdown = app.get(ShutdownService);
  shutdown.onDrain(() => publicListener.stopAccepting());

  await app.listen(config.listeners.internal.port, config.listeners.internal.host);
  const internalAddress = app.getHttpServer().address() as AddressInfo;
  publicListener.setHealthHandler(app.getHttpAdapter().getInstance());
  const publicAddress = await publicListener.listen(config.listeners.public.host, config.listeners.public.port);

  let closing: Promise<void> | null = null;
  const close = (): Promise<void> => {
    closing ??= (async () => {
      await shutdown.drain();
      await shutdown.awaitClientsGone();
      await app.close();
    })();
    return closing;
  };
  return { app, publicAddress, internalAddress, close };
}
