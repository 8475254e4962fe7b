import { DynamicModule, Module, Type } from '@nestjs/common';
import { APP_FILTER, APP_PIPE } from '@nestjs/core';
import { ScheduleModule } from '@nestjs/schedule';
import type { DestinationStream } from 'pino';
import { AdminModule } from './admin/admin.module.js';
import { ArchiveModule } from './archive/archive.module.js';
import { AuthModule } from './auth/auth.module.js';
import { ProblemDetailsFilter } from './common/problem-details.filter.js';
import { createValidationPipe } from './common/validation.js';
import { AppConfig } from './config/app-config.js';
import { ConfigModule } from './config/config.module.js';
import { DatabaseModule } from './database/database.module.js';
import { DocumentsModule } from './documents/documents.module.js';
import { HealthModule } from './health/health.module.js';
import { IdempotencyModule } from './idempotency/idempotency.module.js';
import { LoggingModule } from './logging/logging.module.js';
import { MetricsModule } from './metrics/metrics.module.js';
import { OutboundWebhooksModule } from './outbound-webhooks/outbound-webhooks.module.js';
import { RetentionModule } from './retention/retention.module.js';
import { WebhooksModule } from './webhooks/webhooks.module.js';

export interface AppModuleOptions {
  config: AppConfig;
  /** DATABASE_URL, or the address of the embedded cluster started for this process. */
  databaseUrl: string;
  logDestination?: DestinationStream;
  /** Extra modules mounted beside the real ones; tests use it for probe routes that fail on purpose. */
  extraModules?: Type[];
}

@Module({})
export class AppModule {
  static forRoot({ config, databaseUrl, logDestination, extraModules = [] }: AppModuleOptions): DynamicModule {
    return {
      module: AppModule,
      imports: [
        ConfigModule.forRoot(config),
        LoggingModule.forRoot(config, logDestination),
        DatabaseModule.forRoot({ config, url: databaseUrl }),
        ScheduleModule.forRoot(),
        HealthModule,
        MetricsModule,
        AuthModule,
        AdminModule,
        IdempotencyModule,
        DocumentsModule,
        WebhooksModule,
        OutboundWebhooksModule,
        RetentionModule,
        ArchiveModule,
        ...extraModules,
      ],
      providers: [
        { provide: APP_FILTER, useClass: ProblemDetailsFilter },
        { provide: APP_PIPE, useFactory: createValidationPipe },
      ],
    };
  }
}
