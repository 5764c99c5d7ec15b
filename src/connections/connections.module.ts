import { Module } from '@nestjs/common';
import { ConnectionRegistry } from './connection-registry';

/** Owns the registry of connected clients. */
@Module({ providers: [ConnectionRegistry], exports: [ConnectionRegistry] })
export class ConnectionsModule {}
