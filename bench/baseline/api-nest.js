'use strict';
// The `api` scenario's third reference: the floor of "a Nest controller on
// @nestjs/platform-express" (the gateway's design). A minimal Nest 11 app, body
// parser off, whose controller routes do only what the bare routes of
// api-bare.js do (read the body, JSON.parse, 204 / the batch results): no
// pipes, no validation, no metrics, no token check. Plain JS: the decorators
// are applied as functions. Env: HOST, BACKEND_API_PORT.

require('reflect-metadata');
const { Controller, Get, HttpCode, Module, Post, Put, Req } = require('@nestjs/common');
const { NestFactory } = require('@nestjs/core');

const HOST = process.env.HOST || '127.0.0.1';
const PORT = Number(process.env.BACKEND_API_PORT || 8081);

function readBody(req) {
  return new Promise((resolve, reject) => {
    const chunks = [];
    req.on('data', (c) => chunks.push(c));
    req.on('end', () => resolve(Buffer.concat(chunks).toString('utf8')));
    req.on('error', reject);
  });
}

class ApiController {
  async publish(req) {
    JSON.parse(await readBody(req));
  }
  async subscribe(req) {
    await readBody(req);
  }
  async lattice(req) {
    JSON.parse(await readBody(req));
  }
  async batch(req) {
    const { commands } = JSON.parse(await readBody(req));
    return { results: commands.map(() => ({ status: 204 })) };
  }
  ready() {
    return 'ok';
  }
}

const route = (name, ...decorators) => {
  const descriptor = Object.getOwnPropertyDescriptor(ApiController.prototype, name);
  for (const decorate of decorators) decorate(ApiController.prototype, name, descriptor);
};
for (const name of ['publish', 'subscribe', 'lattice', 'batch']) Req()(ApiController.prototype, name, 0);
route('publish', Post('v1/publish/*topic'), HttpCode(204));
route('subscribe', Put('v1/connection/:cid/subscriptions/*topic'), HttpCode(204));
route('lattice', Post('v1/lattice/*namespace'), HttpCode(204));
route('batch', Post('v1/batch'), HttpCode(200));
route('ready', Get('health/ready'));
Controller()(ApiController);

class AppModule {}
Module({ controllers: [ApiController] })(AppModule);

NestFactory.create(AppModule, { bodyParser: false, logger: false }).then((app) => {
  app.getHttpAdapter().getInstance().disable('x-powered-by');
  return app.listen(PORT, HOST);
});
process.on('SIGTERM', () => process.exit(0));
