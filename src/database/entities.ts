import { AdminAuthFailureEntity } from '../admin/admin-auth-failure.entity.js';
import { AdminEntity, AdminTokenEntity, AdminSessionEntity, AdminOidcLoginEntity } from '../admin/admin.entity.js';
import { AuditLogEntity } from '../admin/audit-log.entity.js';
import { ArchiveCheckpointEntity } from '../archive/archive-checkpoint.entity.js';
import { ArchiveEntryEntity } from '../archive/archive-entry.entity.js';
import { ArchiveNodeEntity } from '../archive/archive-node.entity.js';
import { ArchiveVerificationEntity } from '../archive/archive-verification.entity.js';
import { ApiKeyEntity } from '../auth/api-key.entity.js';
import { BankEventEntity } from '../documents/bank-event.entity.js';
import { DocumentEventEntity } from '../documents/document-event.entity.js';
import { DocumentEntity } from '../documents/document.entity.js';
import { IdempotencyRecordEntity } from '../idempotency/idempotency-record.entity.js';
import { OutboundDeliveryAttemptEntity } from '../outbound-webhooks/outbound-delivery-attempt.entity.js';
import { OutboundDeliveryEntity } from '../outbound-webhooks/outbound-delivery.entity.js';
import { WebhookEndpointEntity } from '../outbound-webhooks/webhook-endpoint.entity.js';

/**
 * Every table's entity, for each data source: the application's, the CLI's and the migrations' (which
 * `migration:generate` diffs against the database). A list rather than a file pattern: the gateway is an
 * ES module, and TypeORM would import each matched file itself. Each module's `forFeature` names the ones
 * its repositories use; entities.spec.ts checks this list against the `*.entity.ts` files.
 */
export const ENTITIES = [
  AdminAuthFailureEntity,
  AdminEntity,
  AdminTokenEntity,
  AdminSessionEntity,
  AdminOidcLoginEntity,
  AuditLogEntity,
  ApiKeyEntity,
  ArchiveCheckpointEntity,
  ArchiveEntryEntity,
  ArchiveNodeEntity,
  ArchiveVerificationEntity,
  BankEventEntity,
  DocumentEventEntity,
  DocumentEntity,
  IdempotencyRecordEntity,
  OutboundDeliveryAttemptEntity,
  OutboundDeliveryEntity,
  WebhookEndpointEntity,
];
