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

@Controller('admin/marked')
class MarkedAdminController {
  @Post()
  @Idempotent()
  create(): void {}
}

@Controller()
class MarkedBareController {
  @Post('api/v1x')
  @Idempotent()
  notUnderTheApi(): void {}
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

  it('names every @Idempotent() route outside /api/v1, where no API key would name its source', async () => {
    const coverage = await coverageOf(MarkedAdminController, MarkedBareController);
    expect(() => coverage.assertComplete()).toThrow(
      '@Idempotent() outside /api/v1/, where no API key names the source of its records: POST /admin/marked, POST /api/v1x. Remove it there.',
    );
  });

  it('names both kinds of mistake at once', async () => {
    const coverage = await coverageOf(ThingsController, MarkedAdminController);
    expect(() => coverage.assertComplete()).toThrow(
      /^Not idempotent, .*: POST \/api\/v1\/things\/:id\/forget\. .* @Idempotent\(\) outside .*: POST \/admin\/marked\. Remove it there\.$/,
    );
  });
});
