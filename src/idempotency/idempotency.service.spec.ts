import { jest } from '@jest/globals';
import { Test } from '@nestjs/testing';
import { getDataSourceToken } from '@nestjs/typeorm';
import { AppError } from '../common/app-error.js';
import { AppConfig } from '../config/app-config.js';
import { ClaimFinding, IdempotencyRepository } from './idempotency.repository.js';
import { IdempotentCall, IdempotencyService } from './idempotency.service.js';

const CALL: IdempotentCall = { source: 'acme-erp', key: 'order-0001', fingerprint: 'f1', instance: '/api/v1/documents', requestId: 'r1' };
const RECORD = { fingerprint: 'f1', responseStatus: 201, responseBody: '{"id":"d1"}', responseLocation: '/api/v1/documents/d1' };

/** A query runner as the service drives it: what it was asked to do, in order. */
function fakeRunner() {
  const calls: string[] = [];
  const runner = {
    calls,
    manager: { name: 'the transaction' },
    isTransactionActive: false,
    startTransaction: jest.fn(async () => {
      calls.push('start');
      runner.isTransactionActive = true;
    }),
    commitTransaction: jest.fn(async () => {
      calls.push('commit');
      runner.isTransactionActive = false;
    }),
    rollbackTransaction: jest.fn(async () => {
      calls.push('rollback');
      runner.isTransactionActive = false;
    }),
    release: jest.fn(async () => void calls.push('release')),
  };
  return runner;
}

/** The service as Nest builds it, over a repository that answers as told and a data source whose query runner records what it is asked. */
async function serviceWith(finding: ClaimFinding, storeAndCommit?: jest.Mock) {
  const runner = fakeRunner();
  const claim = jest.fn<() => Promise<ClaimFinding>>().mockResolvedValue(finding);
  // The repository stores the answer as the transaction's last statement and commits it.
  storeAndCommit ??= jest.fn(async () => runner.commitTransaction());
  const moduleRef = await Test.createTestingModule({
    providers: [
      IdempotencyService,
      { provide: getDataSourceToken(), useValue: { createQueryRunner: () => runner } },
      { provide: IdempotencyRepository, useValue: { claim, storeAndCommit } },
      { provide: AppConfig, useValue: Object.assign(new AppConfig(), { IDEMPOTENCY_TTL_SECONDS: 60 }) },
    ],
  }).compile();
  return { service: moduleRef.get(IdempotencyService), runner, claim, storeAndCommit };
}

const refusalOf = async (promise: Promise<unknown>) => (await promise.catch((e: unknown) => e)) as AppError;

describe('IdempotencyService', () => {
  it('claims a free key in a transaction it leaves open for the route, and commits the answer with it', async () => {
    const { service, runner, claim, storeAndCommit } = await serviceWith({ held: true, record: null });
    const begun = await service.begin(CALL);
    expect(begun.kind).toBe('claimed');
    expect(claim).toHaveBeenCalledWith(runner.manager, 'acme-erp', 'order-0001');
    expect(runner.calls).toEqual(['start']);
    if (begun.kind !== 'claimed') return;
    expect(begun.claim.manager).toBe(runner.manager);

    await service.finish(begun.claim, CALL, { status: 201, body: '{"id":"d2"}', location: '/api/v1/documents/d2' });
    expect(storeAndCommit).toHaveBeenCalledWith(
      runner,
      { idempotencyKey: 'order-0001', source: 'acme-erp', fingerprint: 'f1', responseStatus: 201, responseBody: '{"id":"d2"}', responseLocation: '/api/v1/documents/d2' },
      60,
    );
    expect(runner.calls).toEqual(['start', 'commit', 'release']);
  });

  it('answers a replay from the live record, and ends its transaction at once', async () => {
    // The record decides, whether or not the lock was free: a finished request's key is free again.
    for (const held of [true, false]) {
      const { service, runner } = await serviceWith({ held, record: RECORD });
      expect(await service.begin(CALL)).toEqual({ kind: 'replay', answer: { status: 201, body: '{"id":"d1"}', location: '/api/v1/documents/d1' } });
      expect(runner.calls).toEqual(['start', 'rollback', 'release']);
    }
  });

  it('refuses a key used for another request (422) and one still held by a running request (409, Retry-After), changing nothing', async () => {
    const reused = await serviceWith({ held: true, record: { ...RECORD, fingerprint: 'another' } });
    expect(await refusalOf(reused.service.begin(CALL))).toMatchObject({ code: 'IDEMPOTENCY_KEY_REUSED' });
    expect(reused.runner.calls).toEqual(['start', 'rollback', 'release']);

    const inUse = await serviceWith({ held: false, record: null });
    expect(await refusalOf(inUse.service.begin(CALL))).toMatchObject({ code: 'IDEMPOTENCY_KEY_IN_USE', headers: { 'Retry-After': '1' } });
    expect(inUse.runner.calls).toEqual(['start', 'rollback', 'release']);
  });

  it('rolls back and releases when the answer cannot be stored, and when the route is abandoned', async () => {
    const failing = await serviceWith({ held: true, record: null }, jest.fn<() => Promise<void>>().mockRejectedValue(new Error('connection lost')));
    const begun = await failing.service.begin(CALL);
    if (begun.kind !== 'claimed') throw new Error('not claimed');
    await expect(failing.service.finish(begun.claim, CALL, { status: 201, body: '{}', location: null })).rejects.toThrow('connection lost');
    expect(failing.runner.calls).toEqual(['start', 'rollback', 'release']);

    const abandoned = await serviceWith({ held: true, record: null });
    const again = await abandoned.service.begin(CALL);
    if (again.kind !== 'claimed') throw new Error('not claimed');
    await abandoned.service.abandon(again.claim);
    expect(abandoned.runner.calls).toEqual(['start', 'rollback', 'release']);
  });

  it('stores a business refusal as the answer, as the error filter renders it; anything else is not an answer', async () => {
    const { service } = await serviceWith({ held: true, record: null });
    const refusal = service.refusalAnswer(new AppError('DUPLICATE_DOCUMENT', 'already there'), CALL);
    expect(refusal).toMatchObject({ status: 409, location: null });
    expect(JSON.parse(refusal!.body)).toMatchObject({ code: 'DUPLICATE_DOCUMENT', detail: 'already there', instance: '/api/v1/documents', requestId: 'r1' });
    for (const code of ['INVALID_STATE_TRANSITION', 'NOT_FOUND'] as const) expect(service.refusalAnswer(new AppError(code, 'no'), CALL)?.status).toBeGreaterThanOrEqual(404);
    expect(service.refusalAnswer(AppError.validation([]), CALL)).toBeNull();
    expect(service.refusalAnswer(new AppError('UNAUTHORIZED', 'not yours'), CALL)).toBeNull();
    expect(service.refusalAnswer(new Error('boom'), CALL)).toBeNull();
  });

  it('checks the key header before anything else', () => {
    expect(() => IdempotencyService.parseKey(undefined)).toThrow('X-Idempotency-Key header is required');
    expect(() => IdempotencyService.parseKey('short')).toThrow('X-Idempotency-Key header is malformed');
    expect(() => IdempotencyService.parseKey(['order-0001', 'order-0002'])).toThrow('X-Idempotency-Key header is malformed');
    expect(IdempotencyService.parseKey('order-0001')).toBe('order-0001');
  });
});
