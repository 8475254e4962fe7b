import { Module } from '@nestjs/common';
import { MetricsController } from './metrics.controller';
import { MetricsTokenGuard } from './metrics-token.guard';
import { MetricsService } from './metrics.service';

@Module({ controllers: [MetricsController], providers: [MetricsService, MetricsTokenGuard], exports: [MetricsService] })
export class MetricsModule {}
