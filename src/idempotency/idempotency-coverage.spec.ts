import { Controller, Get, Post } from '@nestjs/common';
import { MetadataScanner } from '@nestjs/core';
import { unguardedPosts } from './idempotency-coverage';
import { Idempotent } from './idempotency.interceptor';

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

const scan = (...controllers: (new () => object)[]) =>
  unguardedPosts(controllers.map((metatype) => ({ metatype, instance: new metatype() })), new MetadataScanner());

describe('IdempotencyCoverage', () => {
  it('names every POST under /api/v1 that is not @Idempotent(), and nothing else', () => {
    expect(scan(ThingsController, AdminThingsController, BareController)).toEqual(['POST /api/v1/things/:id/forget', 'POST /api/v1/bare']);
  });

  it('accepts a controller whose POST routes are all marked', () => {
    expect(scan(AdminThingsController)).toEqual([]);
  });
});
