import { ApiProperty } from '@nestjs/swagger';
import { DOCUMENT_TYPES } from '../document.entity.js';
import type { DocumentRecord } from '../document-changes.js';
import { DOCUMENT_STATUSES } from '../lifecycle.js';
import { TaxpayerDto } from './create-document.dto.js';

export class PaymentDto {
  @ApiProperty({ nullable: true, type: String, example: 'PAID', description: "The bank's last status applied or recorded (upper case)" })
  status: string | null;
  @ApiProperty({ nullable: true, type: String, example: 'evt_123' }) lastEventId: string | null;
  @ApiProperty({ nullable: true, type: String, format: 'date-time' }) updatedAt: string | null;
}

export class DocumentResponseDto {
  @ApiProperty({ format: 'uuid' }) id: string;
  @ApiProperty({ example: 'acme-erp' }) source: string;
  @ApiProperty({ example: 'INV-2026-0001' }) externalId: string;
  @ApiProperty({ enum: DOCUMENT_TYPES }) type: string;
  @ApiProperty({ type: TaxpayerDto }) taxpayer: TaxpayerDto;
  @ApiProperty({ example: '2026-11-20', format: 'date' }) issueDate: string;
  @ApiProperty({ example: 'EUR' }) currency: string;
  @ApiProperty({ example: '119.00' }) totalAmount: string;
  @ApiProperty({ example: '19.00' }) taxAmount: string;
  @ApiProperty({ nullable: true, type: String, example: 'PAY-2026-0001' }) providerReference: string | null;
  @ApiProperty({ enum: DOCUMENT_STATUSES, example: 'PENDING_PAYMENT' }) status: string;
  @ApiProperty({ type: PaymentDto }) payment: PaymentDto;
  @ApiProperty({ type: 'object', additionalProperties: { type: 'string' }, example: { costCenter: 'CC-42' } }) metadata: Record<string, string>;
  @ApiProperty({ format: 'date-time' }) createdAt: string;
  @ApiProperty({ format: 'date-time' }) updatedAt: string;
}

export class DocumentPageDto {
  @ApiProperty({ type: [DocumentResponseDto] }) data: DocumentResponseDto[];
  @ApiProperty({ nullable: true, type: String, description: 'Pass as `cursor` for the next page; null on the last page' })
  nextCursor: string | null;
}

/** A document as the API shows it, made from the row as stored: the create's answer, a read and a list alike. */
export function toDocumentResponse(d: DocumentRecord): DocumentResponseDto {
  return {
    id: d.id,
    source: d.source,
    externalId: d.externalId,
    type: d.type,
    taxpayer: { taxId: d.taxpayerTaxId, name: d.taxpayerName, country: d.taxpayerCountry },
    issueDate: d.issueDate,
    currency: d.currency,
    totalAmount: d.totalAmount,
    taxAmount: d.taxAmount,
    providerReference: d.providerReference,
    status: d.status,
    payment: { status: d.paymentStatus, lastEventId: d.paymentLastEventId, updatedAt: d.paymentUpdatedAt?.toISOString() ?? null },
    metadata: d.metadata,
    createdAt: d.createdAt.toISOString(),
    updatedAt: d.updatedAt.toISOString(),
  };
}
