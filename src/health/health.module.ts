import { Module, OnModuleInit } from '@nestjs/common';
import { Gauge } from 'prom-client';
import { MetricsModule } from '../metrics/metrics.module.js';
import { MetricsService } from '../metrics/metrics.service.js';
import { DatabaseProbe } from './database-probe.js';
import { HealthController } from './health.controller.js';
import { Readiness } from './readiness.js';

@Module({ imports: [MetricsModule], controllers: [HealthController], providers: [DatabaseProbe, Readiness], exports: [Readiness] })
export class HealthModule implements OnModuleInit {
  constructor(
    private readonly readiness: Readiness,
    private readonly metrics: MetricsService,
  ) {}

  onModuleInit(): void {
    const readiness = this.readiness;
    new Gauge({
      name: 'gateway_ready',
      help: 'Whether this instance is ready for traffic (1): its database answers and it is not shutting down',
      registers: [this.metrics.registry],
      async collect() {
        this.set((await readiness.ready()) ? 1 : 0);
      },
    });
  }
}
