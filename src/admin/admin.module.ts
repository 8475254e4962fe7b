import { Module } from '@nestjs/common';
import { AuthModule } from '../auth/auth.module';
import { WebhooksModule } from '../webhooks/webhooks.module';
import { AdminApiKeysService } from './admin-api-keys.service';
import { AdminApiController } from './admin-api.controller';
import { AdminAuthFailuresService } from './admin-auth-failures.service';
import { AdminConsoleController, RootRedirectController } from './admin-console.controller';
import { adminTokenProvider } from './admin-token';
import { AdminTokenGuard } from './admin-token.guard';
import { AuditLogService } from './audit-log.service';
import { ConsoleAssets } from './console-assets';

@Module({
  imports: [AuthModule, WebhooksModule],
  controllers: [AdminConsoleController, RootRedirectController, AdminApiController],
  providers: [adminTokenProvider, AdminTokenGuard, AdminAuthFailuresService, AdminApiKeysService, AuditLogService, ConsoleAssets],
})
export class AdminModule {}
