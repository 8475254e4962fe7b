import { Controller, Get, Post, Type } from '@nestjs/common';
import { FastifyAdapter, NestFastifyApplication } from '@nestjs/platform-fastify';
import { Test } from '@nestjs/testing';
import { IdempotencyCoverage } from './idempotency-coverage.js';
import { Idempotent } from './idempotency.interceptor.js';
import { IdempotencyService } from './idempotency.service.js';

@Controller('api/v1/things')
class ThingsController {
  @Post()
  @Idempotent()
  create(): void {}

  @Post(':id/forget')
  forget(): void {}

  @Get(':id')
  read(): void {}
}

@Controller('admin/things')
class AdminThingsController {
  @Post()
  create(): void {}
}

@Controller()
class BareController {
  @Post('api/v1/bare')
  bare(): void {}

  @Post('api/v1x')
  notUnderTheApi(): void {}
}

/** The routes as the application registers them, on Fastify, with the coverage watching. */
async function coverageOf(...controllers: Type[]): Promise<IdempotencyCoverage> {
  const moduleRef = await Test.createTestingModule({ controllers, providers: [{ provide: IdempotencyService, useValue: {} }] }).compile();
  const app = moduleRef.createNestApplication<NestFastifyApplication>(new FastifyAdapter(), { logger: false });
  const coverage = new IdempotencyCoverage();
  coverage.watch(app.getHttpAdapter().getInstance());
  await app.init();
  await app.close();
  return coverage;
}

describe('IdempotencyCoverage', () => {
  it('names every POST under /api/v1 that is not @Idempotent(), and nothing else', async () => {
    const coverage = await coverageOf(ThingsController, AdminThingsController, BareController);
    expect(() => coverage.assertComplete()).toThrow('Not idempotent, though the README requires it: POST /api/v1/things/:id/forget, POST /api/v1/bare.');
  });

  it('accepts an application whose POST routes under /api/v1 are all marked', async () => {
    const coverage = await coverageOf(AdminThingsController);
    expect(() => coverage.assertComplete()).not.toThrow();
  });
});
