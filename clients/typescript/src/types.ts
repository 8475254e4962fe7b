/** Names for the generated schemas this client takes and returns. */
import type { components, operations } from './generated/openapi';

type Schemas = components['schemas'];

export type TaxDocument = Schemas['DocumentResponseDto'];
export type CreateDocumentInput = Schemas['CreateDocumentDto'];
export type DocumentStatus = TaxDocument['status'];
/** The filters of `GET /api/v1/documents`; paging is the iterator's business. */
export type ListDocumentsQuery = Omit<NonNullable<operations['listDocuments']['parameters']['query']>, 'cursor'>;

export type DocumentEvent = Schemas['DocumentEventDto'];
export type EventPage = Schemas['EventPageDto'];

export type Me = Schemas['MeResponseDto'];

export type WebhookEndpoint = Schemas['WebhookEndpointResponseDto'];
export type WebhookEndpointWithSecret = Schemas['WebhookEndpointWithSecretDto'];
export type CreateWebhookEndpointInput = Schemas['CreateWebhookEndpointDto'];
export type UpdateWebhookEndpointInput = Schemas['UpdateWebhookEndpointDto'];

export type Problem = Schemas['ProblemDto'];
export type ErrorCode = Problem['code'];
export type FieldError = Schemas['FieldErrorDto'];

/** The body of a push notification (Standard Webhooks): the feed event exactly as `GET /api/v1/events` lists it. */
export interface WebhookMessage {
  type: DocumentEvent['type'];
  timestamp: string;
  data: DocumentEvent;
}
