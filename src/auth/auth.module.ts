import { Module } from '@nestjs/common';
import { UpstreamModule } from '../upstream/upstream.module';
import { AuthService } from './auth.service';

@Module({ imports: [UpstreamModule], providers: [AuthService], exports: [AuthService] })
export class AuthModule {}
