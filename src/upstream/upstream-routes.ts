import { Injectable } from '@nestjs/common';
import { GatewayConfig, Handler } from '../config/gateway-config';
import { RouteTable } from './destinations';

/** The precompiled route table of every handler, built once at start. */
@Injectable()
export class UpstreamRoutes {
  private readonly tables = new Map<string, RouteTable>();

  constructor(config: GatewayConfig) {
    for (const handler of config.handlers) this.tables.set(handler.name, new RouteTable(handler, config.destinations));
  }

  /** The route table of `handler`. */
  tableFor(handler: Handler): RouteTable {
    return this.tables.get(handler.name)!;
  }
}
