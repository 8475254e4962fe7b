export { GatewayClient } from './client';
export type { GatewayClientOptions } from './client';
export { Archive } from './archive';
export type { ArchiveOptions, DocumentVerification } from './archive';
export {
  canonicalJson,
  checkNewCheckpoint,
  decodeProof,
  entryLeafHash,
  MemoryCheckpointStore,
  openCheckpoint,
  openNote,
  parseCheckpoint,
  parseVerifierKey,
  verifyConsistency,
  verifyDocumentArchive,
  verifyInclusion,
} from './archive-proofs';
export type {
  ArchiveEntry,
  ArchiveFinding,
  Checkpoint,
  CheckpointChange,
  CheckpointStore,
  DocumentArchive,
  DocumentArchiveVerification,
  TreeHead,
  VerifierKey,
  VerifyDocumentArchiveOptions,
} from './archive-proofs';
export { Documents } from './documents';
export { EventFeed, Events } from './events';
export type { FollowEventsOptions, ListEventsOptions } from './events';
export { WebhookEndpoints } from './webhook-endpoints';
export { verifyWebhook, webhooks } from './webhooks';
export type { WebhookHeaders } from './webhooks';
export { newIdempotencyKey } from './idempotency';
export type { IdempotentCallOptions } from './idempotency';
export { DEFAULT_RETRY_POLICY, parseRetryAfter, retryDelay } from './retry';
export type { RetryPolicy } from './retry';
export type { CallOptions, RetryEvent } from './transport';
export { GatewayError, GatewayNetworkError, GatewayProblemError, GatewayTimeoutError, GatewayWebhookVerificationError } from './errors';
export type * from './types';
export type { components, operations, paths } from './generated/openapi';
