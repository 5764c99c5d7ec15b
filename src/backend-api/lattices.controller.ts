import { Controller, Delete, HttpCode, Param, Post, Put } from '@nestjs/common';
import { LatticeBody } from '../lattice/lattice-body';
import { LatticeService } from '../lattice/lattice.service';
import { ROUTES } from './api-routes';
import { LatticeBodyPipe, NoBodyPipe } from './body.pipes';
import { ApiEndpoint, ApiV1 } from './openapi.decorators';
import { ConnectionIdPipe, NamespacePipe } from './path-params';
import { RequestBody } from './raw-body';

/** Endpoints 4, 5 and 6: lattice subscriptions and updates. */
@ApiV1('lattices')
@Controller('v1')
export class LatticesController {
  constructor(private readonly lattices: LatticeService) {}

  @Put(ROUTES.latticeSubscription)
  @ApiEndpoint(
    'Subscribe a connection to a lattice namespace with initial content (endpoint 4)',
    [
      ['cid', 'cid'],
      ['namespace', 'namespace'],
    ],
    'LatticeContent',
    [400, 401, 403, 404, 413, 503],
  )
  @HttpCode(204)
  subscribe(
    @Param('cid', ConnectionIdPipe) cid: string,
    @Param('namespace', NamespacePipe) ns: string,
    @RequestBody(LatticeBodyPipe) body: LatticeBody,
  ): Promise<void> {
    return this.lattices.subscribe(cid, ns, body);
  }

  @Delete(ROUTES.latticeSubscription)
  @ApiEndpoint(
    'Unsubscribe a connection from a lattice namespace (endpoint 5)',
    [
      ['cid', 'cid'],
      ['namespace', 'namespace'],
    ],
    'none',
    [400, 401, 403, 404, 413, 503],
  )
  @HttpCode(204)
  unsubscribe(
    @Param('cid', ConnectionIdPipe) cid: string,
    @Param('namespace', NamespacePipe) ns: string,
    @RequestBody(NoBodyPipe) _: void,
  ): Promise<void> {
    return this.lattices.unsubscribe(cid, ns);
  }

  @Post(ROUTES.latticeUpdate)
  @ApiEndpoint(
    'Update a lattice namespace; each subscriber gets what its user may see (endpoint 6)',
    [['namespace', 'namespace']],
    'LatticeContent',
    [400, 401, 403, 404, 413, 503],
  )
  @HttpCode(204)
  update(
    @Param('namespace', NamespacePipe) ns: string,
    @RequestBody(LatticeBodyPipe) body: LatticeBody,
  ): Promise<void> {
    return this.lattices.update(ns, body);
  }
}
