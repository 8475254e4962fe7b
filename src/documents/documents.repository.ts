import { Injectable } from '@nestjs/common';
import { randomUUID } from 'node:crypto';
import { Database, Queryable, Transaction } from '../database/database';
import { bind, sql } from '../database/sql';
import { claimOutcome } from '../idempotency/idempotency.repository';
import type { ClaimArguments, ClaimRow, StoredAnswer } from '../idempotency/idempotency.repository';
import { DocumentEntity } from './document.entity';
import { CreateDocumentDto } from './dto/create-document.dto';
import type { DocumentStatus } from './lifecycle';

/** A document before its insert: what the row will hold, but for the times the database gives it. */
export type DocumentDraft = Omit<DocumentEntity, 'seq' | 'createdAt' | 'updatedAt'>;

/**
 * The document a create inserts, its id made here, with each value as PostgreSQL will give it back:
 * so its answer can be written before the database replies (AnswerInAdvance). A property test in
 * documents.e2e-spec.ts holds every create's answer to what a read of the document then returns.
 */
export function draftDocument(dto: CreateDocumentDto): DocumentDraft {
  return {
    id: randomUUID(),
    source: dto.source,
    externalId: dto.externalId,
    type: dto.type,
    taxpayerTaxId: dto.taxpayer.taxId,
    taxpayerName: dto.taxpayer.name,
    taxpayerCountry: dto.taxpayer.country,
    issueDate: dto.issueDate,
    currency: dto.currency,
    totalAmount: asNumeric(dto.totalAmount),
    taxAmount: asNumeric(dto.taxAmount),
    providerReference: dto.providerReference ?? null,
    status: 'PENDING_PAYMENT',
    paymentStatus: null,
    paymentLastEventId: null,
    paymentUpdatedAt: null,
    metadata: asJsonb(dto.metadata ?? {}),
  };
}

/** An unconstrained numeric's text of a valid amount (AMOUNT_PATTERN): no leading zeros, the scale as sent ("007.50" is "7.50"). */
const asNumeric = (amount: string): string => amount.replace(/^0+(?=\d)/, '');

/** Metadata with its keys in jsonb's order, shorter keys first, then by their UTF-8 bytes, as a read hands them back. */
function asJsonb(metadata: Record<string, string>): Record<string, string> {
  const keys = Object.keys(metadata).map((key) => ({ key, bytes: Buffer.from(key, 'utf8') }));
  keys.sort((a, b) => a.bytes.length - b.bytes.length || Buffer.compare(a.bytes, b.bytes));
  return Object.fromEntries(keys.map(({ key }) => [key, metadata[key]]));
}

/** A documents row as the API's view needs it (the shape of DocumentEntity), for RETURNING and SELECT. */
const COLUMNS = `id, seq, source, external_id AS "externalId", type, taxpayer_tax_id AS "taxpayerTaxId",
  taxpayer_name AS "taxpayerName", taxpayer_country AS "taxpayerCountry", issue_date::text AS "issueDate", currency,
  total_amount AS "totalAmount", tax_amount AS "taxAmount", provider_reference AS "providerReference", status,
  payment_status AS "paymentStatus", payment_last_event_id AS "paymentLastEventId", payment_updated_at AS "paymentUpdatedAt",
  metadata, created_at AS "createdAt", updated_at AS "updatedAt"`;

const INSERT_COLUMNS = `id, source, external_id, type, taxpayer_tax_id, taxpayer_name, taxpayer_country, issue_date, currency,
  total_amount, tax_amount, provider_reference, status, metadata`;

const INSERT_VALUES = `$1::uuid, $2::varchar, $3::varchar, $4::varchar, $5::varchar, $6::varchar, $7::bpchar, $8::date, $9::bpchar,
  $10::numeric, $11::numeric, $12::varchar, $13::varchar, $14::jsonb`;

/** The parameters $1–$14 of a document's insert. */
const draftValues = (d: DocumentDraft): unknown[] => [
  d.id,
  d.source,
  d.externalId,
  d.type,
  d.taxpayerTaxId,
  d.taxpayerName,
  d.taxpayerCountry,
  d.issueDate,
  d.currency,
  d.totalAmount,
  d.taxAmount,
  d.providerReference,
  d.status,
  JSON.stringify(d.metadata),
];

export const PROVIDER_REFERENCE_LOCK_NAMESPACE = 7_340_217;

/**
 * Serialises everything that concerns one providerReference (a bank event for it, a document created with
 * it), so an event can never be stored as unmatched while its document is being created. Sent as a statement
 * of its own, before the statement that reads: PostgreSQL takes a statement's snapshot when it starts it, so
 * a read behind the lock sees everything committed by whoever held it before.
 */
export const LOCK_PROVIDER_REFERENCE = sql('document-lock-provider-reference', `SELECT pg_advisory_xact_lock(${PROVIDER_REFERENCE_LOCK_NAMESPACE}, hashtext($1))`);

/**
 * Before a create with a providerReference ($3): the claim lock of its idempotency key ($1 source, $2 key;
 * idempotency_lock_key), taken without waiting so that a duplicate arriving meanwhile learns at once that
 * the key is in use, and only once that is held, the providerReference lock, waited for.
 */
const LOCK_FOR_CREATE = sql(
  'document-lock-for-create',
  `WITH claim AS MATERIALIZED (SELECT pg_try_advisory_xact_lock(idempotency_lock_key($1, $2)) AS held)
   SELECT pg_advisory_xact_lock(${PROVIDER_REFERENCE_LOCK_NAMESPACE}, hashtext($3)) FROM claim WHERE claim.held`,
);

/**
 * A create in one statement, its answer known in advance: the key is claimed through
 * idempotency_claim_or_find() ($15–$22), which stores the answer or says what the key holds, and the
 * document and its `document.created` event are written only if it claimed. Nothing at all is written when
 * bank events wait for the providerReference (their effect is not in the answer). A duplicate externalId or
 * providerReference fails the statement (unique violation), so the claim goes with it.
 */
const CREATE_CLAIMED = sql(
  'document-create-claimed',
  `WITH waiting AS MATERIALIZED (
     SELECT EXISTS (SELECT 1 FROM webhook_events w WHERE w.provider_reference = $12::varchar AND w.outcome = 'unmatched') AS yes),
   claim AS MATERIALIZED (
     SELECT idempotency_claim_or_find($15, $16, $17, $18, $19, $20, $21, $22) AS outcome FROM waiting WHERE NOT waiting.yes),
   doc AS (
     INSERT INTO documents (${INSERT_COLUMNS}) SELECT ${INSERT_VALUES} FROM claim WHERE (claim.outcome).claimed
     RETURNING id, source, status),
   event AS (
     INSERT INTO document_events (source, document_id, type, status) SELECT source, id, 'document.created', status FROM doc)
   SELECT waiting.yes AS waiting, (claim.outcome).claimed, (claim.outcome).answer, (claim.outcome).stored_fingerprint AS "storedFingerprint",
          (claim.outcome).stored_status AS "storedStatus", (claim.outcome).stored_location AS "storedLocation"
     FROM waiting LEFT JOIN claim ON true`,
);

/** The general way: the document as stored and its event, or nothing for a duplicate. */
const INSERT = sql(
  'document-insert',
  `WITH doc AS (
     INSERT INTO documents (${INSERT_COLUMNS}) VALUES (${INSERT_VALUES}) ON CONFLICT DO NOTHING RETURNING ${COLUMNS}),
   event AS (
     INSERT INTO document_events (source, document_id, type, status) SELECT source, id, 'document.created', status FROM doc)
   SELECT * FROM doc`,
);

const EXTERNAL_ID_TAKEN = sql('document-external-id-taken', 'SELECT EXISTS (SELECT 1 FROM documents WHERE source = $1 AND external_id = $2) AS taken');

/**
 * By primary key alone, the source compared by the caller: with `AND source = …` a generic plan made while
 * the statistics were older than a bulk load chose the (source, seq) index and read every document of the
 * source for each look-up.
 */
const FIND = sql('document-find', `SELECT ${COLUMNS} FROM documents WHERE id = $1`);
const FIND_FOR_UPDATE = sql('document-find-for-update', `SELECT ${COLUMNS} FROM documents WHERE id = $1 FOR UPDATE`);

/** Newest first by insertion order ($5: before this seq), optionally of one status and type. */
const PAGE = sql(
  'document-page',
  `SELECT ${COLUMNS} FROM documents
    WHERE source = $1 AND ($2::varchar IS NULL OR status = $2) AND ($3::varchar IS NULL OR type = $3) AND ($4::bigint IS NULL OR seq < $4)
    ORDER BY seq DESC LIMIT $5`,
);

/** The same by externalId, which is unique per source: one index probe, whatever the size of the source. */
const PAGE_BY_EXTERNAL_ID = sql(
  'document-page-by-external-id',
  `SELECT ${COLUMNS} FROM documents
    WHERE source = $1 AND external_id = $6 AND ($2::varchar IS NULL OR status = $2) AND ($3::varchar IS NULL OR type = $3)
      AND ($4::bigint IS NULL OR seq < $4)
    LIMIT $5`,
);

/** Administrators' search by providerReference, of every source or of one ($1). */
const PAGE_BY_PROVIDER_REFERENCE = sql(
  'document-page-by-provider-reference',
  `SELECT ${COLUMNS} FROM documents
    WHERE provider_reference = $6 AND ($1::varchar IS NULL OR source = $1) AND ($2::varchar IS NULL OR status = $2)
      AND ($3::varchar IS NULL OR type = $3) AND ($4::bigint IS NULL OR seq < $4)
    ORDER BY seq DESC LIMIT $5`,
);

/**
 * A status or payment change and, when the status really changes, its `document.status_changed` event: $1 id,
 * $2 status, $3 payment status (null keeps the payment details), $4 bank event id, $5 the status before. The
 * caller holds the row's lock (FOR UPDATE).
 */
const CHANGE = sql(
  'document-change',
  `WITH changed AS (
     UPDATE documents SET
       status = $2::varchar,
       payment_status = COALESCE($3::varchar, payment_status),
       payment_last_event_id = COALESCE($4::varchar, payment_last_event_id),
       payment_updated_at = CASE WHEN $3::varchar IS NULL THEN payment_updated_at ELSE now() END,
       updated_at = now()
     WHERE id = $1
     RETURNING ${COLUMNS}),
   event AS (
     INSERT INTO document_events (source, document_id, type, status, previous_status)
     SELECT source, id, 'document.status_changed', status, $5::varchar FROM changed WHERE status <> $5::varchar)
   SELECT * FROM changed`,
);

/** What a create that claims its idempotency key in the same statement did (see CREATE_CLAIMED). */
export type ClaimedCreate =
  | { created: true; answer: string }
  | { created: false; reason: 'not_claimed'; stored: StoredAnswer | null }
  | { created: false; reason: 'payments_waiting' | 'duplicate' };

export interface DocumentFilter {
  status?: DocumentStatus;
  type?: string;
  externalId?: string;
  /** Only documents inserted before this one (its seq). */
  before?: string;
}

/** A unique violation of the documents table: externalId or providerReference already taken. */
const isDuplicate = (error: unknown) => (error as { code?: unknown; table?: unknown }).code === '23505' && (error as { table?: unknown }).table === 'documents';

/** Every query of the documents table. */
@Injectable()
export class DocumentsRepository {
  constructor(private readonly db: Database) {}

  /**
   * Claims the idempotency key (`claim`, idempotency_claim_or_find's arguments) and writes the document in one
   * statement; behind LOCK_FOR_CREATE when it has a providerReference (then with BEGIN and COMMIT, all sent
   * together in one round trip). idempotency_claim_or_find takes the key's lock again, which a transaction
   * that holds it already is granted at once.
   */
  async createClaimed(draft: DocumentDraft, claim: ClaimArguments): Promise<ClaimedCreate> {
    const values = [...draftValues(draft), claim[0], claim[1], claim[2], claim[3], claim[4], claim[5], claim[6], claim[7]];
    let row: ClaimRow & { waiting: boolean };
    try {
      row = draft.providerReference
        ? ((await this.db.transactionOf([bind(LOCK_FOR_CREATE, claim[0], claim[1], draft.providerReference), bind(CREATE_CLAIMED, ...values)]))[1][0] as typeof row)
        : (await this.db.query<typeof row>(CREATE_CLAIMED, values))[0];
    } catch (error) {
      if (isDuplicate(error)) return { created: false, reason: 'duplicate' };
      throw error;
    }
    if (row.waiting) return { created: false, reason: 'payments_waiting' };
    const outcome = claimOutcome(row);
    return outcome.claimed ? { created: true, answer: outcome.answer } : { created: false, reason: 'not_claimed', stored: outcome.stored };
  }

  /** Takes the providerReference lock until `tx` ends (see LOCK_PROVIDER_REFERENCE). */
  async lockProviderReference(tx: Transaction, providerReference: string): Promise<void> {
    await tx.query(LOCK_PROVIDER_REFERENCE, [providerReference]);
  }

  /** The document as stored, or null for a duplicate (nothing written). */
  async insert(tx: Transaction, draft: DocumentDraft): Promise<DocumentEntity | null> {
    const [document] = await tx.query<DocumentEntity>(INSERT, draftValues(draft));
    return document ?? null;
  }

  async externalIdTaken(db: Queryable, source: string, externalId: string): Promise<boolean> {
    const [{ taken }] = await db.query<{ taken: boolean }>(EXTERNAL_ID_TAKEN, [source, externalId]);
    return taken;
  }

  /** `forUpdate`: locked until the transaction `db` ends. */
  async find(db: Queryable, id: string, { forUpdate = false } = {}): Promise<DocumentEntity | null> {
    const [document] = await db.query<DocumentEntity>(forUpdate ? FIND_FOR_UPDATE : FIND, [id]);
    return document ?? null;
  }

  page(source: string, filter: DocumentFilter, limit: number): Promise<DocumentEntity[]> {
    const values = [source, filter.status ?? null, filter.type ?? null, filter.before ?? null, limit];
    return filter.externalId ? this.db.query<DocumentEntity>(PAGE_BY_EXTERNAL_ID, [...values, filter.externalId]) : this.db.query<DocumentEntity>(PAGE, values);
  }

  /** Of every source with this providerReference, or of one; newest first. */
  pageByProviderReference(providerReference: string, source: string | undefined, filter: Omit<DocumentFilter, 'externalId'>, limit: number): Promise<DocumentEntity[]> {
    return this.db.query<DocumentEntity>(PAGE_BY_PROVIDER_REFERENCE, [source ?? null, filter.status ?? null, filter.type ?? null, filter.before ?? null, limit, providerReference]);
  }

  /** Changes a locked document's status (and payment details), appending its feed event when the status changes. */
  async change(tx: Transaction, change: { id: string; status: DocumentStatus; previous: DocumentStatus; paymentStatus: string | null; eventId: string | null }): Promise<DocumentEntity> {
    const [document] = await tx.query<DocumentEntity>(CHANGE, [change.id, change.status, change.paymentStatus, change.eventId, change.previous]);
    return document;
  }
}
