import { randomUUID } from 'node:crypto';
import { DocumentEntity } from './document.entity';
import { CreateDocumentDto } from './dto/create-document.dto';

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
