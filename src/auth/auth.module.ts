import { Module } from '@nestjs/common';
import { APP_GUARD } from '@nestjs/core';
import { ApiKeyGuard } from './api-key.guard';
import { ApiKeysService } from './api-keys.service';
import { KeyRateLimiter } from './key-rate-limiter';
import { KeyUsageRecorder } from './key-usage.recorder';
import { MeController } from './me.controller';

@Module({
  controllers: [MeController],
  providers: [ApiKeysService, KeyUsageRecorder, KeyRateLimiter, { provide: APP_GUARD, useClass: ApiKeyGuard }],
  exports: [ApiKeysService],
})
export class AuthModule {}
