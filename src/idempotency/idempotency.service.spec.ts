import { jest } from '@jest/globals';
import { Test } from '@nestjs/testing';
import { AppError } from '../common/app-error.js';
import { AppConfig } from '../config/app-config.js';
import { type Opening, type Transaction, Transactions } from '../database/transaction.js';
import { FoundRecord, IdempotencyRepository, NewRecord } from './idempotency.repository.js';
import { AnsweredBefore, IdempotentCall, IdempotencyService } from './idempotency.service.js';

const CALL: IdempotentCall = { source: 'acme-erp', key: 'order-0001', fingerprint: 'f1', instance: '/api/v1/documents', requestId: 'r1' };
const RECORD = { fingerprint: 'f1', responseStatus: 201, responseBody: '{"id":"d1"}', responseLocation: '/api/v1/documents/d1' };
const REPLAY = { status: 201, body: '{"id":"d1"}', location: '/api/v1/documents/d1' };

/** What the repository hands the service to send: markers, so the test sees which went where. */
const CLAIM = { lock: 'the claim' };
const BEHIND_CLAIM = { statement: 'the record behind the claim' };
const STORE = { statement: 'the store' };

/**
 * The service as Nest builds it, over a repository that answers as told (the database is its boundary) and
 * Transactions that hand out a transaction recording what it was asked, with the opening it was begun with.
 */
async function serviceWith({ found = null, purged = [] }: { found?: FoundRecord | null; purged?: Array<number | Error> } = {}) {
  const tx = {
    commit: jest.fn<(last?: readonly unknown[]) => Promise<void>>().mockResolvedValue(undefined),
    rollback: jest.fn<() => Promise<void>>().mockResolvedValue(undefined),
  };
  const openings: Opening[] = [];
  const transactions = { begin: jest.fn((opening: Opening) => (openings.push(opening), tx as unknown as Transaction)) };
  const purges = [...purged];
  const records = {
    find: jest.fn<(source: string, key: string) => Promise<FoundRecord | null>>().mockResolvedValue(found),
    claim: jest.fn(() => CLAIM),
    recordBehindClaim: jest.fn(() => BEHIND_CLAIM),
    stored: jest.fn<(record: NewRecord, ttlSeconds: number, takeOver: boolean) => unknown>(() => STORE),
    purgeExpired: jest.fn(async () => {
      const next = purges.shift() ?? 0;
      if (next instanceof Error) throw next;
      return next;
    }),
  };
  const moduleRef = await Test.createTestingModule({
    providers: [
      IdempotencyService,
      { provide: Transactions, useValue: transactions },
      { provide: IdempotencyRepository, useValue: records },
      { provide: AppConfig, useValue: Object.assign(new AppConfig(), { IDEMPOTENCY_TTL_SECONDS: 60 }) },
    ],
  }).compile();
  return { service: moduleRef.get(IdempotencyService), tx, transactions, openings, records };
}

const failureOf = (run: () => unknown): unknown => {
  try {
    run();
  } catch (error) {
    return error;
  }
  throw new Error('nothing was thrown');
};

describe('IdempotencyService', () => {
  it('looks the key up alone as the request arrives: a replay of a live answer, or a new key, expired or not', async () => {
    const live = await serviceWith({ found: { ...RECORD, live: true } });
    expect(await live.service.look(CALL)).toEqual({ kind: 'replay', answer: REPLAY });
    expect(live.records.find).toHaveBeenCalledWith('acme-erp', 'order-0001');
    // Nothing is opened for a look-up.
    expect(live.transactions.begin).not.toHaveBeenCalled();

    expect(await (await serviceWith()).service.look(CALL)).toEqual({ kind: 'new', expired: false });
    // An expired answer is no answer, whoever's it was: the key is taken over.
    expect(await (await serviceWith({ found: { ...RECORD, fingerprint: 'another', live: false } })).service.look(CALL)).toEqual({ kind: 'new', expired: true });
  });

  it('refuses a key whose live answer is another request\u2019s (422)', async () => {
    const { service } = await serviceWith({ found: { ...RECORD, fingerprint: 'another', live: true } });
    await expect(service.look(CALL)).rejects.toMatchObject({ code: 'IDEMPOTENCY_KEY_REUSED' });
  });

  it('opens the request\u2019s transaction with the claim, and the key\u2019s record behind it only when the key had an expired one', async () => {
    const { service, openings, records } = await serviceWith();
    service.open(CALL, { kind: 'new', expired: false });
    expect(records.claim).toHaveBeenCalledWith('acme-erp', 'order-0001');
    expect(openings[0]).toMatchObject({ locks: [CLAIM], reads: [] });
    service.open(CALL, { kind: 'new', expired: true });
    expect(records.recordBehindClaim).toHaveBeenCalledWith('acme-erp', 'order-0001');
    expect(openings[1]).toMatchObject({ locks: [CLAIM], reads: [BEHIND_CLAIM] });
  });

  it('checks the claim\u2019s answers: granted goes on; another holder is a 409 with Retry-After; a record found behind it is AnsweredBefore, or a 422', async () => {
    const { service, openings } = await serviceWith();
    service.open(CALL, { kind: 'new', expired: false });
    service.open(CALL, { kind: 'new', expired: true });
    const [fresh, expired] = openings;
    expect(() => fresh.check([true], [])).not.toThrow();
    expect(() => expired.check([true], [[]])).not.toThrow();
    // Still expired behind the claim: nobody took it over since the look-up, and this request does.
    expect(() => expired.check([true], [[{ ...RECORD, live: false }]])).not.toThrow();
    expect(failureOf(() => fresh.check([false], []))).toMatchObject({ code: 'IDEMPOTENCY_KEY_IN_USE', headers: { 'Retry-After': '1' } });
    expect(failureOf(() => expired.check([false], [[]]))).toMatchObject({ code: 'IDEMPOTENCY_KEY_IN_USE' });
    // The record decides, whether or not the claim was granted: its holder has finished.
    for (const held of [true, false]) {
      const answered = failureOf(() => expired.check([held], [[{ ...RECORD, live: true }]]));
      expect(answered).toBeInstanceOf(AnsweredBefore);
      expect((answered as AnsweredBefore).answer).toEqual(REPLAY);
    }
    expect(failureOf(() => expired.check([true], [[{ ...RECORD, fingerprint: 'another', live: true }]]))).toMatchObject({ code: 'IDEMPOTENCY_KEY_REUSED' });
  });

  it('stores the answer as the last write of the commit, taking over an expired record only when the key had one', async () => {
    for (const expired of [false, true]) {
      const { service, tx, records } = await serviceWith();
      const opened = service.open(CALL, { kind: 'new', expired });
      await service.finish(opened, CALL, { kind: 'new', expired }, { status: 201, body: '{"id":"d2"}', location: '/api/v1/documents/d2' });
      expect(records.stored).toHaveBeenCalledWith(
        {
          idempotencyKey: 'order-0001',
          source: 'acme-erp',
          fingerprint: 'f1',
          responseStatus: 201,
          responseBody: '{"id":"d2"}',
          responseLocation: '/api/v1/documents/d2',
        },
        60,
        expired,
      );
      expect(tx.commit).toHaveBeenCalledWith([STORE]);
      expect(tx.rollback).not.toHaveBeenCalled();
    }
  });

  it('passes on a commit\u2019s failure, and rolls back an abandoned request', async () => {
    const failing = await serviceWith();
    failing.tx.commit.mockRejectedValue(Object.assign(new Error('duplicate key'), { code: '23505' }));
    const opened = failing.service.open(CALL, { kind: 'new', expired: false });
    await expect(failing.service.finish(opened, CALL, { kind: 'new', expired: false }, { status: 201, body: '{}', location: null })).rejects.toMatchObject({
      code: '23505',
    });

    const abandoned = await serviceWith();
    await abandoned.service.abandon(abandoned.service.open(CALL, { kind: 'new', expired: false }));
    expect(abandoned.tx.rollback).toHaveBeenCalledTimes(1);
    expect(abandoned.tx.commit).not.toHaveBeenCalled();
  });

  it('stores a business refusal as the answer, as the error filter renders it; anything else is not an answer', async () => {
    const { service } = await serviceWith();
    const refusal = service.refusalAnswer(new AppError('DUPLICATE_DOCUMENT', 'already there'), CALL);
    expect(refusal).toMatchObject({ status: 409, location: null });
    expect(JSON.parse(refusal!.body)).toMatchObject({ code: 'DUPLICATE_DOCUMENT', detail: 'already there', instance: '/api/v1/documents', requestId: 'r1' });
    for (const code of ['INVALID_STATE_TRANSITION', 'NOT_FOUND'] as const)
      expect(service.refusalAnswer(new AppError(code, 'no'), CALL)?.status).toBeGreaterThanOrEqual(404);
    expect(service.refusalAnswer(AppError.validation([]), CALL)).toBeNull();
    expect(service.refusalAnswer(new AppError('UNAUTHORIZED', 'not yours'), CALL)).toBeNull();
    expect(service.refusalAnswer(new Error('boom'), CALL)).toBeNull();
  });

  it('purges expired records in batches until one comes back short, and reports what it purged when the database fails', async () => {
    const full = await serviceWith({ purged: [3, 3, 1] });
    expect(await full.service.purgeExpired(3)).toBe(7);
    expect(full.records.purgeExpired).toHaveBeenCalledTimes(3);
    const failing = await serviceWith({ purged: [3, new Error('connection lost')] });
    expect(await failing.service.purgeExpired(3)).toBe(3);
  });

  it('checks the key header before anything else', () => {
    expect(() => IdempotencyService.parseKey(undefined)).toThrow('X-Idempotency-Key header is required');
    expect(() => IdempotencyService.parseKey('short')).toThrow('X-Idempotency-Key header is malformed');
    expect(() => IdempotencyService.parseKey(['order-0001', 'order-0002'])).toThrow('X-Idempotency-Key header is malformed');
    expect(IdempotencyService.parseKey('order-0001')).toBe('order-0001');
  });
});
