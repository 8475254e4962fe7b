import { Module } from '@nestjs/common';
import { TypeOrmModule } from '@nestjs/typeorm';
import { AuthModule } from '../auth/auth.module';
import { DocumentsModule } from '../documents/documents.module';
import { OutboundWebhooksModule } from '../outbound-webhooks/outbound-webhooks.module';
import { AdminAuthFailureEntity } from './admin-auth-failure.entity';
import { AdminAuthController } from './admin-auth.controller';
import { AdminApiKeysController } from './admin-api-keys.controller';
import { AdminApiKeysService } from './admin-api-keys.service';
import { AdminAuthFailuresRepository } from './admin-auth-failures.repository';
import { AdminAuthFailuresService } from './admin-auth-failures.service';
import { AdminAuthGuard } from './admin-auth.guard';
import { AdminConsoleController, RootRedirectController } from './admin-console.controller';
import { AdminOperationsController } from './admin-operations.controller';
import { AdminOperationsService } from './admin-operations.service';
import { AdminSsoService } from './admin-sso.service';
import { AdminEntity, AdminOidcLoginEntity, AdminSessionEntity, AdminTokenEntity } from './admin.entity';
import { adminTokenProvider } from './admin-token';
import { AdminsController } from './admins.controller';
import { AdminsRepository } from './admins.repository';
import { AdminsService } from './admins.service';
import { AuditLogEntity } from './audit-log.entity';
import { AuditLogRepository } from './audit-log.repository';
import { AuditLogService } from './audit-log.service';
import { ConsoleAssets } from './console-assets';

/** Administration: people and their roles, API keys, the audit log, operators' view of the traffic, the console. */
@Module({
  imports: [
    TypeOrmModule.forFeature([AdminEntity, AdminTokenEntity, AdminSessionEntity, AdminOidcLoginEntity, AuditLogEntity, AdminAuthFailureEntity]),
    AuthModule,
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
export class AdminModule {}
