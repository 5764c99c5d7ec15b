import { Module } from '@nestjs/common';
import { Broker, MemoryBroker } from './broker';

/** Provides the Broker: in memory on a single node (Redis comes with cluster mode, SPEC §11). */
@Module({ providers: [{ provide: Broker, useFactory: () => new MemoryBroker() }], exports: [Broker] })
export class ClusterModule {}
