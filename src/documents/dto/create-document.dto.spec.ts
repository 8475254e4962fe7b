import 'reflect-metadata';
import { ValidationPipe } from '@nestjs/common';
import fc from 'fast-check';
import { RESERVED_KEYS } from '../../common/json-body-parser';
import { createValidationPipe } from '../../common/validation';
import { DOCUMENT_TYPES } from '../document.entity';
import { acceptCreateDocument, CreateDocumentDto, TaxpayerDto } from './create-document.dto';

/** class-validator and class-transformer alone, as the pipe runs them when the fast path declines. */
const pipe = createValidationPipe();
async function decorators(body: unknown): Promise<{ ok: true; dto: unknown } | { ok: false }> {
  try {
    return { ok: true, dto: await ValidationPipe.prototype.transform.call(pipe, body, { type: 'body', metatype: CreateDocumentDto }) };
  } catch {
    return { ok: false };
  }
}

const text = (min: number, max: number) =>
  fc.oneof(
    fc.string({ minLength: min, maxLength: max }),
    fc.string({ unit: 'binary', minLength: min, maxLength: max }),
    fc.constantFrom('a'.repeat(max), 'a'.repeat(max + 1), '', '\uFE0F', 'x\uFE0F', '😀'.repeat(max), `${'a'.repeat(max - 1)}😀`),
  );
const amount = fc.oneof(
  fc.stringMatching(/^\d{1,15}(\.\d{1,4})?$/),
  fc.constantFrom('0', '119.00', '19.00', '1.', '.5', '-1', '1e3', '1234567890123456', '1.23456', ' 1', 119),
);
const valid = fc.record(
  {
    source: fc.constantFrom('acme-erp', 'shop-1'),
    externalId: fc.oneof(fc.string({ minLength: 1, maxLength: 128 }), fc.constantFrom('RE-Müller-2026', 'Łódź/1', 'фактура-7')),
    type: fc.constantFrom(...DOCUMENT_TYPES),
    taxpayer: fc.record({
      taxId: fc.string({ minLength: 1, maxLength: 64 }),
      name: fc.oneof(fc.string({ minLength: 1, maxLength: 200 }), fc.constantFrom('Müller GmbH', 'Société Générale', 'Ωmega ΑΕ', '株式会社テスト')),
      country: fc.constantFrom('DE', 'FR', 'US'),
    }),
    issueDate: fc.constantFrom('2026-11-20', '2024-02-29', '1999-12-31'),
    currency: fc.constantFrom('EUR', 'USD', 'JPY'),
    totalAmount: fc.constantFrom('119.00', '1000', '0.0001'),
    taxAmount: fc.constantFrom('0', '0.0001'),
    providerReference: fc.stringMatching(/^[A-Za-z0-9._:/-]{1,128}$/),
    // Reserved keys never get this far: the JSON parser refuses them (findUnstorable).
    // Keys naming Object methods: class-transformer would skip them but for the DTO's @Transform.
    metadata: fc.dictionary(
      fc.oneof(fc.string({ minLength: 1, maxLength: 40 }).filter((key) => !RESERVED_KEYS.has(key)), fc.constantFrom('toString', 'valueOf', 'hasOwnProperty', '__defineGetter__')),
      fc.string({ maxLength: 500 }),
      { maxKeys: 20 },
    ),
  },
  { requiredKeys: ['source', 'externalId', 'type', 'taxpayer', 'issueDate', 'currency', 'totalAmount', 'taxAmount'] },
);
/** A valid body with one field replaced by something near or past a rule's edge, or by anything at all. */
const mutation = fc.oneof(
  fc.record({ key: fc.constantFrom('externalId', 'source'), value: text(1, 128) }),
  fc.record({ key: fc.constantFrom('providerReference'), value: fc.oneof(text(1, 128), fc.constantFrom('PAY 1', 'PAY#1', null)) }),
  fc.record({ key: fc.constantFrom('totalAmount', 'taxAmount'), value: amount }),
  fc.record({ key: fc.constantFrom('issueDate'), value: fc.constantFrom('2026-02-30', '2025-02-29', '2026-1-01', '20261120', '2026-11-20T00:00:00Z') }),
  fc.record({ key: fc.constantFrom('currency'), value: fc.constantFrom('eur', 'XXX', 'EURO', 'EU') }),
  fc.record({ key: fc.constantFrom('type'), value: fc.constantFrom('invoice', 'OTHER', '') }),
  fc.record({
    key: fc.constantFrom('taxpayer'),
    value: fc.oneof(
      fc.record({ taxId: text(1, 64), name: text(1, 200), country: fc.constantFrom('DE', 'de', 'XX', 'DEU') }),
      fc.constantFrom({ taxId: 'DE1', name: 'M', country: 'DE', extra: 1 }, { taxId: 'DE1', name: 'M' }, [], null, 'DE1'),
    ),
  }),
  fc.record({
    key: fc.constantFrom('metadata'),
    value: fc.oneof(
      fc.dictionary(text(0, 41), fc.oneof(text(0, 501), fc.integer()), { maxKeys: 22 }),
      fc.constantFrom([], null, 'x', { a: null }, { a: { b: 'c' } }),
    ),
  }),
  fc.record({ key: fc.constantFrom('source', 'externalId', 'type', 'taxpayer', 'issueDate', 'currency', 'totalAmount', 'taxAmount', 'unknown', 'constructor'), value: fc.anything() }),
);
const omission = fc.constantFrom('source', 'externalId', 'type', 'taxpayer', 'issueDate', 'currency', 'totalAmount', 'taxAmount');
/** As a body arrives: through JSON (no undefined, no functions; __proto__ an own key as JSON.parse makes it). */
const asReceived = (body: object) => JSON.parse(JSON.stringify(body)) as unknown;

describe('acceptCreateDocument, the create body’s fast path', () => {
  it('accepts only bodies the DTO’s decorators accept, and makes the very DTO they make', async () => {
    const body = fc.oneof(
      valid,
      fc.tuple(valid, mutation).map(([v, { key, value }]) => ({ ...v, [key]: value })),
      fc.tuple(valid, omission).map(([v, key]) => Object.fromEntries(Object.entries(v).filter(([k]) => k !== key))),
    );
    let accepted = 0;
    await fc.assert(
      fc.asyncProperty(body, async (raw) => {
        const received = asReceived(raw);
        const fast = acceptCreateDocument(received);
        if (fast === null) return;
        accepted += 1;
        const full = await decorators(asReceived(raw));
        expect(full).toStrictEqual({ ok: true, dto: fast });
        expect(fast).toBeInstanceOf(CreateDocumentDto);
        expect(fast.taxpayer).toBeInstanceOf(TaxpayerDto);
      }),
      { numRuns: 5000 },
    );
    // The property says nothing unless the fast path takes a good share of the bodies.
    expect(accepted).toBeGreaterThan(300);
  });

  it('takes every valid body of plain text, so the fast path is the one a normal create runs', async () => {
    await fc.assert(
      fc.asyncProperty(valid, async (raw) => {
        const received = asReceived(raw);
        expect((await decorators(received)).ok).toBe(true);
        expect(acceptCreateDocument(received)).not.toBeNull();
      }),
      { numRuns: 500 },
    );
  });

  it('is what the application’s pipe runs for a valid body, without class-validator', async () => {
    const full = jest.spyOn(ValidationPipe.prototype, 'transform');
    try {
      const dto = await createValidationPipe().transform(asReceived(fc.sample(valid, 1)[0]), { type: 'body', metatype: CreateDocumentDto });
      expect(dto).toBeInstanceOf(CreateDocumentDto);
      expect(full).not.toHaveBeenCalled();
    } finally {
      full.mockRestore();
    }
  });

  it('leaves a bad body to the full pipe, whose answer names the field', async () => {
    const body = { ...(asReceived(fc.sample(valid, 1)[0]) as object), taxAmount: '200.00', totalAmount: '100.00' };
    expect(acceptCreateDocument(body)).toBeNull();
    await expect(pipe.transform(body, { type: 'body', metatype: CreateDocumentDto })).rejects.toMatchObject({
      code: 'VALIDATION_ERROR',
      errors: [{ field: 'taxAmount', message: 'must not exceed totalAmount' }],
    });
  });
});
