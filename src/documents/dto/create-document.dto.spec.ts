import 'reflect-metadata';
import fc from 'fast-check';
import { RESERVED_KEYS } from '../../common/json-body-parser.js';
import { createValidationPipe } from '../../common/validation.js';
import { DOCUMENT_TYPES } from '../document.entity.js';
import { AppError } from '../../common/app-error.js';
import { CreateDocumentDto, TaxpayerDto } from './create-document.dto.js';

/** The application's validation pipe on a create body: the DTO's decorators are the only rules. */
const pipe = createValidationPipe();
async function validated(body: unknown): Promise<{ ok: true; dto: CreateDocumentDto } | { ok: false; fields: string[] }> {
  try {
    return { ok: true, dto: (await pipe.transform(body, { type: 'body', metatype: CreateDocumentDto })) as CreateDocumentDto };
  } catch (error) {
    if (!(error instanceof AppError) || error.code !== 'VALIDATION_ERROR') throw error;
    return { ok: false, fields: (error.errors ?? []).map((e) => e.field) };
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
      fc.oneof(
        fc.string({ minLength: 1, maxLength: 40 }).filter((key) => !RESERVED_KEYS.has(key)),
        fc.constantFrom('toString', 'valueOf', 'hasOwnProperty', '__defineGetter__'),
      ),
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
  fc.record({
    key: fc.constantFrom('source', 'externalId', 'type', 'taxpayer', 'issueDate', 'currency', 'totalAmount', 'taxAmount', 'unknown', 'constructor'),
    value: fc.anything(),
  }),
);
const omission = fc.constantFrom('source', 'externalId', 'type', 'taxpayer', 'issueDate', 'currency', 'totalAmount', 'taxAmount');
/** As a body arrives: through JSON (no undefined, no functions; __proto__ an own key as JSON.parse makes it). */
const asReceived = (body: object) => JSON.parse(JSON.stringify(body)) as unknown;

describe('CreateDocumentDto through the validation pipe', () => {
  it('accepts every valid body and makes the DTO of it, taxpayer included, with the values as sent', async () => {
    await fc.assert(
      fc.asyncProperty(valid, async (raw) => {
        const received = asReceived(raw);
        const result = await validated(received);
        expect(result).toMatchObject({ ok: true });
        if (!result.ok) return;
        expect(result.dto).toBeInstanceOf(CreateDocumentDto);
        expect(result.dto.taxpayer).toBeInstanceOf(TaxpayerDto);
        expect(JSON.parse(JSON.stringify(result.dto))).toEqual(received);
      }),
      { numRuns: 500 },
    );
  });

  it('refuses a body with one field changed past a rule, naming that field and no other', async () => {
    let refused = 0;
    await fc.assert(
      fc.asyncProperty(valid, mutation, async (raw, { key, value }) => {
        const result = await validated(asReceived({ ...raw, [key]: value }));
        if (result.ok) return;
        refused += 1;
        expect(result.fields.length).toBeGreaterThan(0);
        // taxAmount is compared with totalAmount, so a bad total can also be reported on the tax.
        for (const field of result.fields) expect([key, ...(key === 'totalAmount' ? ['taxAmount'] : [])]).toContain(field.split('.')[0]);
      }),
      { numRuns: 3000 },
    );
    // The property says nothing unless most mutations are refused.
    expect(refused).toBeGreaterThan(1500);
  });

  it('names each required field that is missing', async () => {
    await fc.assert(
      fc.asyncProperty(valid, omission, async (raw, key) => {
        const result = await validated(asReceived(Object.fromEntries(Object.entries(raw).filter(([k]) => k !== key))));
        expect(result).toEqual({ ok: false, fields: [key] });
      }),
      { numRuns: 300 },
    );
  });

  it('names the tax that exceeds the total', async () => {
    const body = { ...(asReceived(fc.sample(valid, 1)[0]) as object), taxAmount: '200.00', totalAmount: '100.00' };
    await expect(pipe.transform(body, { type: 'body', metatype: CreateDocumentDto })).rejects.toMatchObject({
      code: 'VALIDATION_ERROR',
      errors: [{ field: 'taxAmount', message: 'must not exceed totalAmount' }],
    });
  });
});
