import { Module } from '@nestjs/common';
import { ClusterModule } from '../cluster/cluster.module';
import { ConnectionsModule } from '../connections/connections.module';
import { LatticeService } from './lattice.service';

@Module({ imports: [ConnectionsModule, ClusterModule], providers: [LatticeService], exports: [LatticeService] })
export class LatticeModule {}
