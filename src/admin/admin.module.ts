import { Module } from '@nestjs/common';
import { AuthModule } from '../auth/auth.module';
import { OutboundWebhooksModule } from '../outbound-webhooks/outbound-webhooks.module';
import { DocumentsModule } from '../documents/documents.module';
import { AdminApiKeysService } from './admin-api-keys.service';
import { AdminApiController } from './admin-api.controller';
import { AdminAuthFailuresRepository } from './admin-auth-failures.repository';
import { AdminAuthFailuresService } from './admin-auth-failures.service';
import { AdminConsoleController, RootRedirectController } from './admin-console.controller';
import { AdminOutboundWebhooksController } from './admin-outbound-webhooks.controller';
import { AdminWebhookEventsService } from './admin-webhook-events.service';
import { adminTokenProvider } from './admin-token';
import { AdminTokenGuard } from './admin-token.guard';
import { AuditLogRepository } from './audit-log.repository';
import { AuditLogService } from './audit-log.service';
import { ConsoleAssets } from './console-assets';

@Module({
  imports: [AuthModule, DocumentsModule, OutboundWebhooksModule],
  controllers: [AdminConsoleController, RootRedirectController, AdminApiController, AdminOutboundWebhooksController],
  providers: [
    adminTokenProvider,
    AdminTokenGuard,
    AdminAuthFailuresRepository,
    AdminAuthFailuresService,
    AdminApiKeysService,
    AdminWebhookEventsService,
    AuditLogRepository,
    AuditLogService,
    ConsoleAssets,
  ],
})
export class AdminModule {}
