import { Module } from '@nestjs/common';
import { APP_GUARD } from '@nestjs/core';
import { TypeOrmModule } from '@nestjs/typeorm';
import { MetricsModule } from '../metrics/metrics.module';
import { ApiKeyEntity } from './api-key.entity';
import { ApiKeyGuard } from './api-key.guard';
import { ApiKeysRepository } from './api-keys.repository';
import { ApiKeysService } from './api-keys.service';
import { KeyRateLimiter } from './key-rate-limiter';
import { KeyUsageRecorder } from './key-usage.recorder';
import { MeController } from './me.controller';
import { RateLimitGuard } from './rate-limit.guard';

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
