import { Module } from '@nestjs/common';
import { TypeOrmModule } from '@nestjs/typeorm';
import { AuthModule } from '../auth/auth.module';
import { OutboundWebhooksModule } from '../outbound-webhooks/outbound-webhooks.module';
import { WebhooksModule } from '../webhooks/webhooks.module';
import { AdminApiKeysService } from './admin-api-keys.service';
import { AdminApiController } from './admin-api.controller';
import { AdminAuthFailureEntity } from './admin-auth-failure.entity';
import { AdminAuthFailuresService } from './admin-auth-failures.service';
import { AdminConsoleController } from './admin-console.controller';
import { AdminOutboundWebhooksController } from './admin-outbound-webhooks.controller';
import { adminTokenProvider } from './admin-token';
import { AdminTokenGuard } from './admin-token.guard';
import { AuditLogEntity } from './audit-log.entity';
import { AuditLogService } from './audit-log.service';
import { ConsoleAssets } from './console-assets';

@Module({
  imports: [AuthModule, WebhooksModule, OutboundWebhooksModule, TypeOrmModule.forFeature([AuditLogEntity, AdminAuthFailureEntity])],
  controllers: [AdminConsoleController, AdminApiController, AdminOutboundWebhooksController],
  providers: [adminTokenProvider, AdminTokenGuard, AdminAuthFailuresService, AdminApiKeysService, AuditLogService, ConsoleAssets],
})
export class AdminModule {}
