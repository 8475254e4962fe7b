import { Global, Module } from '@nestjs/common';
import { DiscoveryModule } from '@nestjs/core';
import { IdempotencyCoverage } from './idempotency-coverage';
import { IdempotencyInterceptor } from './idempotency.interceptor';
import { IdempotencyRepository } from './idempotency.repository';
import { IdempotencyService } from './idempotency.service';

/** Global so that the controllers marked @Idempotent() get the interceptor and its service wherever they live. */
@Global()
@Module({
  imports: [DiscoveryModule],
  providers: [IdempotencyRepository, IdempotencyService, IdempotencyInterceptor, IdempotencyCoverage],
  exports: [IdempotencyService, IdempotencyInterceptor],
})
export class IdempotencyModule {}
