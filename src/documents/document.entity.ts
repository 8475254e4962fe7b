import { Check, Column, CreateDateColumn, Entity, Index, PrimaryGeneratedColumn, Unique, UpdateDateColumn } from 'typeorm';
import type { DocumentStatus } from './lifecycle.js';

export const DOCUMENT_TYPES = ['INVOICE', 'CREDIT_NOTE', 'RECEIPT', 'TAX_RETURN'] as const;
export type DocumentType = (typeof DOCUMENT_TYPES)[number];

/** Columns in the table's stored order (trace_parent came last), so that a plain read of whole rows projects nothing. */
@Entity('documents')
@Check('ck_documents_status', `status IN ('PENDING_PAYMENT', 'PAID', 'PAYMENT_FAILED', 'CANCELLED', 'REFUNDED')`)
@Check('ck_documents_type', `type IN ('INVOICE', 'CREDIT_NOTE', 'RECEIPT', 'TAX_RETURN')`)
@Check('ck_documents_amounts', `tax_amount >= 0 AND tax_amount <= total_amount`)
@Unique('uq_documents_source_external_id', ['source', 'externalId'])
@Unique('uq_documents_provider_reference_source', ['providerReference', 'source'])
@Index('idx_documents_source_seq', ['source', 'seq'])
export class DocumentEntity {
  @PrimaryGeneratedColumn('uuid')
  id: string;

  /** Insertion order, the key of keyset pagination (a uuid has no order, a timestamp can tie). */
  @Column({ type: 'bigint', generated: 'increment', unique: false })
  seq: string;

  @Column({ type: 'varchar', length: 63 })
  source: string;

  @Column({ name: 'external_id', type: 'varchar', length: 128 })
  externalId: string;

  @Column({ type: 'varchar', length: 16 })
  type: DocumentType;

  @Column({ name: 'taxpayer_tax_id', type: 'varchar', length: 64 })
  taxpayerTaxId: string;

  @Column({ name: 'taxpayer_name', type: 'varchar', length: 200 })
  taxpayerName: string;

  @Column({ name: 'taxpayer_country', type: 'char', length: 2 })
  taxpayerCountry: string;

  @Column({ name: 'issue_date', type: 'date' })
  issueDate: string;

  @Column({ type: 'char', length: 3 })
  currency: string;

  /** Unconstrained numeric keeps the scale that was sent, so "119.00" comes back as "119.00". */
  @Column({ name: 'total_amount', type: 'numeric' })
  totalAmount: string;

  @Column({ name: 'tax_amount', type: 'numeric' })
  taxAmount: string;

  /**
   * Unique within a source only: another source may use the same reference (which document its bank events
   * go to: reference-claims.ts).
   */
  @Column({ name: 'provider_reference', type: 'varchar', length: 128, nullable: true })
  providerReference: string | null;

  @Column({ type: 'varchar', length: 20, default: 'PENDING_PAYMENT' })
  status: DocumentStatus;

  @Column({ name: 'payment_status', type: 'varchar', length: 255, nullable: true })
  paymentStatus: string | null;

  /** Set by every bank event applied, never cleared: the document is established for its reference (reference-claims.ts). */
  @Column({ name: 'payment_last_event_id', type: 'varchar', length: 255, nullable: true })
  paymentLastEventId: string | null;

  @Column({ name: 'payment_updated_at', type: 'timestamptz', nullable: true })
  paymentUpdatedAt: Date | null;

  @Column({ type: 'jsonb', default: () => "'{}'" })
  metadata: Record<string, string>;

  @CreateDateColumn({ name: 'created_at', type: 'timestamptz' })
  createdAt: Date;

  @UpdateDateColumn({ name: 'updated_at', type: 'timestamptz' })
  updatedAt: Date;

  /** The W3C traceparent of the request that created it, when traced: a bank event's trace links to it. Never shown. */
  @Column({ name: 'trace_parent', type: 'varchar', length: 55, nullable: true })
  traceParent: string | null;
}
