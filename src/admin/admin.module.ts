import { Logger, Module, OnModuleInit } from '@nestjs/common';
import { TypeOrmModule } from '@nestjs/typeorm';
import { ArchiveModule } from '../archive/archive.module.js';
import { AuthModule } from '../auth/auth.module.js';
import { AppConfig } from '../config/app-config.js';
import { DocumentsModule } from '../documents/documents.module.js';
import { OutboundWebhooksModule } from '../outbound-webhooks/outbound-webhooks.module.js';
import { AdminAuthFailureEntity } from './admin-auth-failure.entity.js';
import { AdminAuthController } from './admin-auth.controller.js';
import { AdminApiKeysController } from './admin-api-keys.controller.js';
import { AdminApiKeysService } from './admin-api-keys.service.js';
import { AdminAuthFailuresRepository } from './admin-auth-failures.repository.js';
import { AdminAuthFailuresService } from './admin-auth-failures.service.js';
import { AdminAuthGuard } from './admin-auth.guard.js';
import { AdminConsoleController, RootRedirectController } from './admin-console.controller.js';
import { AdminOperationsController } from './admin-operations.controller.js';
import { AdminOperationsService } from './admin-operations.service.js';
import { AdminSsoService } from './admin-sso.service.js';
import { AdminEntity, AdminOidcLoginEntity, AdminSessionEntity, AdminTokenEntity } from './admin.entity.js';
import { publicUrlWarning } from './admin-session.js';
import { adminTokenProvider } from './admin-token.js';
import { AdminsController } from './admins.controller.js';
import { AdminsRepository } from './admins.repository.js';
import { AdminsService } from './admins.service.js';
import { AuditLogEntity } from './audit-log.entity.js';
import { AuditLogRepository } from './audit-log.repository.js';
import { AuditLogService } from './audit-log.service.js';
import { ConsoleAssets } from './console-assets.js';

/** Administration: people and their roles, API keys, the audit log, operators' view of the traffic, the console. */
@Module({
  imports: [
    TypeOrmModule.forFeature([AdminEntity, AdminTokenEntity, AdminSessionEntity, AdminOidcLoginEntity, AuditLogEntity, AdminAuthFailureEntity]),
    AuthModule,
    ArchiveModule,
    DocumentsModule,
    OutboundWebhooksModule,
  ],
  controllers: [AdminConsoleController, RootRedirectController, AdminAuthController, AdminsController, AdminApiKeysController, AdminOperationsController],
  providers: [
    adminTokenProvider,
    AdminAuthGuard,
    AdminAuthFailuresRepository,
    AdminAuthFailuresService,
    AdminsRepository,
    AdminsService,
    AdminApiKeysService,
    AdminOperationsService,
    AdminSsoService,
    AuditLogRepository,
    AuditLogService,
    ConsoleAssets,
  ],
  exports: [AuditLogService],
})
export class AdminModule implements OnModuleInit {
  constructor(private readonly config: AppConfig) {}

  /** Once per start, here: the guard has an instance for its provider and another for the controllers' @UseGuards, and said it twice. */
  onModuleInit(): void {
    const warning = publicUrlWarning(this.config);
    if (warning) new Logger('AdminConsole').warn(warning);
  }
}
