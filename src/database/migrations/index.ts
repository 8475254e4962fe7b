import { ApiKeysAndAdmin1795315784020 } from './1795315784020-ApiKeysAndAdmin.js';
import { DocumentsEventsIdempotency1795316386498 } from './1795316386498-DocumentsEventsIdempotency.js';
import { WebhookEvents1795316829683 } from './1795316829683-WebhookEvents.js';
import { OutboundWebhooks1795326993574 } from './1795326993574-OutboundWebhooks.js';
import { FeedTransactionOrder1795327111506 } from './1795327111506-FeedTransactionOrder.js';
import { WebhookDuplicatesHashOnly1795327111507 } from './1795327111507-WebhookDuplicatesHashOnly.js';
import { OutboundWakeAfterCommit1795327111508 } from './1795327111508-OutboundWakeAfterCommit.js';
import { OutboundDuePerEndpoint1795327111509 } from './1795327111509-OutboundDuePerEndpoint.js';
import { IdempotencyKeyFirst1795327111510 } from './1795327111510-IdempotencyKeyFirst.js';
import { OutboundEndpointLockNotForeignKey1795327111511 } from './1795327111511-OutboundEndpointLockNotForeignKey.js';
import { OutboundEnqueuePerRow1795327111512 } from './1795327111512-OutboundEnqueuePerRow.js';
import { IdempotencyClaimFunction1795327111513 } from './1795327111513-IdempotencyClaimFunction.js';
import { ProviderReferencePerSource1795327111514 } from './1795327111514-ProviderReferencePerSource.js';
import { OutboundEnqueueWithoutFlag1795327111515 } from './1795327111515-OutboundEnqueueWithoutFlag.js';
import { AdminAccounts1795327111516 } from './1795327111516-AdminAccounts.js';
import { AdminViewIndexes1795327111517 } from './1795327111517-AdminViewIndexes.js';
import { BankEventDuplicatesIndex1795327111518 } from './1795327111518-BankEventDuplicatesIndex.js';
import { IdempotencyClaimOrFind1795327111519 } from './1795327111519-IdempotencyClaimOrFind.js';
import { IdempotencyBegin1795327111520 } from './1795327111520-IdempotencyBegin.js';
import { AuditChanges1795327111521 } from './1795327111521-AuditChanges.js';
import { SignInStartAddress1795327111522 } from './1795327111522-SignInStartAddress.js';
import { TraceParent1795327111523 } from './1795327111523-TraceParent.js';
import { DecisionsInTypeScript1795327111524 } from './1795327111524-DecisionsInTypeScript.js';
import { ProviderReferenceFirst1795327111525 } from './1795327111525-ProviderReferenceFirst.js';
import { Archive1795327111526 } from './1795327111526-Archive.js';

/**
 * The migrations, in the order of their timestamps (the order TypeORM runs them in). A list rather than a file pattern, as for the
 * entities (src/database/entities.ts): a new migration is added here; src/database/entities.spec.ts checks that
 * every file of this folder is.
 */
export const MIGRATIONS = [
  ApiKeysAndAdmin1795315784020,
  DocumentsEventsIdempotency1795316386498,
  WebhookEvents1795316829683,
  OutboundWebhooks1795326993574,
  FeedTransactionOrder1795327111506,
  WebhookDuplicatesHashOnly1795327111507,
  OutboundWakeAfterCommit1795327111508,
  OutboundDuePerEndpoint1795327111509,
  IdempotencyKeyFirst1795327111510,
  OutboundEndpointLockNotForeignKey1795327111511,
  OutboundEnqueuePerRow1795327111512,
  IdempotencyClaimFunction1795327111513,
  ProviderReferencePerSource1795327111514,
  OutboundEnqueueWithoutFlag1795327111515,
  AdminAccounts1795327111516,
  AdminViewIndexes1795327111517,
  BankEventDuplicatesIndex1795327111518,
  IdempotencyClaimOrFind1795327111519,
  IdempotencyBegin1795327111520,
  AuditChanges1795327111521,
  SignInStartAddress1795327111522,
  TraceParent1795327111523,
  DecisionsInTypeScript1795327111524,
  ProviderReferenceFirst1795327111525,
  Archive1795327111526,
];
