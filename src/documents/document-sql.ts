import { statement } from '../database/database';
import { providerTransitions } from './lifecycle';

/** A documents row as the API's view needs it (the shape of DocumentEntity), for RETURNING and SELECT. */
export const DOCUMENT_COLUMNS = `id, seq, source, external_id AS "externalId", type, taxpayer_tax_id AS "taxpayerTaxId",
  taxpayer_name AS "taxpayerName", taxpayer_country AS "taxpayerCountry", issue_date::text AS "issueDate", currency,
  total_amount AS "totalAmount", tax_amount AS "taxAmount", provider_reference AS "providerReference", status,
  payment_status AS "paymentStatus", payment_last_event_id AS "paymentLastEventId", payment_updated_at AS "paymentUpdatedAt",
  metadata, created_at AS "createdAt", updated_at AS "updatedAt"`;

/** Placeholders (or SQL expressions) of a document change; `when` gates it on something else in the statement. */
export interface DocumentChangeParameters {
  id: string;
  status: string;
  /** null keeps the payment details as they are. */
  paymentStatus: string;
  eventId: string;
  /** The status before: the feed event is written only when the status really changes. */
  previous: string;
  when?: string;
}

/**
 * Two CTEs: `changed` updates the document (its columns RETURNING, as DOCUMENT_COLUMNS) and `event`
 * appends its `document.status_changed` feed event. The caller holds the row's lock (FOR UPDATE).
 */
export function documentChangeCtes(p: DocumentChangeParameters): string {
  return `changed AS (
     UPDATE documents SET
       status = ${p.status}::varchar,
       payment_status = COALESCE(${p.paymentStatus}::varchar, payment_status),
       payment_last_event_id = COALESCE(${p.eventId}::varchar, payment_last_event_id),
       payment_updated_at = CASE WHEN ${p.paymentStatus}::varchar IS NULL THEN payment_updated_at ELSE now() END,
       updated_at = now()
     WHERE id = ${p.id}${p.when ? ` AND ${p.when}` : ''}
     RETURNING ${DOCUMENT_COLUMNS}),
   event AS (
     INSERT INTO document_events (source, document_id, type, status, previous_status)
     SELECT source, id, 'document.status_changed', status, ${p.previous}::varchar FROM changed WHERE status <> ${p.previous}::varchar)`;
}

/** A status or payment change and its feed event: $1 id, $2 status, $3 payment status, $4 event id, $5 status before. */
export const CHANGE_DOCUMENT = statement(
  'document-change',
  `WITH ${documentChangeCtes({ id: '$1', status: '$2', paymentStatus: '$3', eventId: '$4', previous: '$5' })} SELECT * FROM changed`,
);

/**
 * providerTransitions() as a table for a FROM clause: `provider_transitions (from_status, provider_status,
 * to_status)`. The values are the lifecycle's own constants, never input.
 */
export const PROVIDER_TRANSITIONS = `(VALUES ${providerTransitions()
  .map(({ from, providerStatus, to }) => `('${from}', '${providerStatus}', '${to}')`)
  .join(', ')}) AS provider_transitions (from_status, provider_status, to_status)`;
