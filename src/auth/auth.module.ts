import { Module } from '@nestjs/common';
import { APP_GUARD } from '@nestjs/core';
import { TypeOrmModule } from '@nestjs/typeorm';
import { MetricsModule } from '../metrics/metrics.module.js';
import { ApiKeyEntity } from './api-key.entity.js';
import { ApiKeyGuard } from './api-key.guard.js';
import { ApiKeysRepository } from './api-keys.repository.js';
import { ApiKeysService } from './api-keys.service.js';
import { KeyRateLimiter } from './key-rate-limiter.js';
import { KeyUsageRecorder } from './key-usage.recorder.js';
import { MeController } from './me.controller.js';
import { RateLimitGuard } from './rate-limit.guard.js';

@Module({
  imports: [TypeOrmModule.forFeature([ApiKeyEntity]), MetricsModule],
  controllers: [MeController],
  providers: [
    ApiKeysRepository,
    ApiKeysService,
    KeyUsageRecorder,
    KeyRateLimiter,
    // Global guards run in the order they are registered: the key first (401), then its rate limit (429).
    { provide: APP_GUARD, useClass: ApiKeyGuard },
    { provide: APP_GUARD, useClass: RateLimitGuard },
  ],
  exports: [ApiKeysService],
})
export class AuthModule {}
