import { AppError } from '../common/app-error';
import { AppConfig } from '../config/app-config';
import { Database, Transaction } from '../database/database';
import { IdempotencyRepository, StoredAnswer } from './idempotency.repository';
import { IdempotentCall, IdempotencyService } from './idempotency.service';
import { IdempotentOperation, InAdvanceOutcome } from './idempotent-operation';

const CALL: IdempotentCall = { source: 'acme-erp', key: 'order-0001', fingerprint: 'f1', instance: '/api/v1/documents', requestId: 'r1', successStatus: 201 };
const STORED: StoredAnswer = { fingerprint: 'f1', status: 201, body: '{"id":"d1"}', location: '/api/v1/documents/d1' };

/** The service's decisions over a repository that answers as told and a Database that runs the work on a dummy transaction. */
function serviceWith(records: Partial<Record<keyof IdempotencyRepository, jest.Mock>>) {
  const tx = { afterCommit: jest.fn() } as unknown as Transaction;
  const db = { transaction: jest.fn((work: (t: Transaction) => Promise<unknown>) => work(tx)) } as unknown as Database;
  const repository = { find: jest.fn().mockResolvedValue(null), inUse: jest.fn().mockResolvedValue(false), claim: jest.fn().mockResolvedValue({ claimed: true, answer: '' }), store: jest.fn(), ...records };
  const service = new IdempotencyService(db, repository as unknown as IdempotencyRepository, Object.assign(new AppConfig(), { IDEMPOTENCY_TTL_SECONDS: 60 }));
  return { service, repository, db };
}

const general = (run: () => Promise<unknown>): IdempotentOperation => ({ run, location: '/api/v1/documents/d2' });
const inAdvance = (outcome: InAdvanceOutcome, run = jest.fn()): IdempotentOperation => ({ run, inAdvance: { answer: { id: 'd2' }, claimAndRun: jest.fn().mockResolvedValue(outcome) } });
const codeOf = async (promise: Promise<unknown>) => ((await promise.catch((e: unknown) => e)) as AppError).code;

describe('IdempotencyService', () => {
  it('runs the operation under a fresh claim and stores its answer with it', async () => {
    const { service, repository } = serviceWith({});
    const reply = await service.execute(CALL, async () => general(async () => ({ id: 'd2' })));
    expect(reply).toEqual({ status: 201, body: '{"id":"d2"}', location: '/api/v1/documents/d2', replayed: false });
    expect(repository.claim).toHaveBeenCalledWith(expect.anything(), ['acme-erp', 'order-0001', 'f1', 60, 0, '', null, null]);
    expect(repository.store).toHaveBeenCalledWith(expect.anything(), 'acme-erp', 'order-0001', { status: 201, body: '{"id":"d2"}', location: '/api/v1/documents/d2' });
  });

  it('replays the stored answer of the same request, refuses another request\u2019s key, and says in use otherwise, from what the claim found', async () => {
    const notClaimed = (stored: StoredAnswer | null) => jest.fn().mockResolvedValue({ claimed: false, stored });
    const replayed = serviceWith({ claim: notClaimed(STORED) });
    const run = jest.fn();
    expect(await replayed.service.execute(CALL, async () => general(run))).toEqual({ status: 201, body: STORED.body, location: STORED.location, replayed: true });
    expect(run).not.toHaveBeenCalled();

    const reused = serviceWith({ claim: notClaimed({ ...STORED, fingerprint: 'other' }) });
    expect(await codeOf(reused.service.execute(CALL, async () => general(run)))).toBe('IDEMPOTENCY_KEY_REUSED');

    const busy = serviceWith({ claim: notClaimed(null) });
    const error = await busy.service.execute(CALL, async () => general(run)).catch((e: AppError) => e);
    expect(error).toMatchObject({ code: 'IDEMPOTENCY_KEY_IN_USE', headers: { 'Retry-After': '1' } });
    expect(run).not.toHaveBeenCalled();
    // The claim's own finding is the answer: no second look-up.
    for (const { repository } of [replayed, reused, busy]) {
      expect(repository.find).not.toHaveBeenCalled();
      expect(repository.inUse).not.toHaveBeenCalled();
    }
  });

  it('stores a business refusal as the answer, and lets any other failure roll back unstored', async () => {
    const { service, repository } = serviceWith({});
    const refused = await service.execute(CALL, async () => general(() => Promise.reject(new AppError('DUPLICATE_DOCUMENT', 'already there'))));
    expect(refused).toMatchObject({ status: 409, replayed: false });
    expect(JSON.parse(refused.body)).toMatchObject({ code: 'DUPLICATE_DOCUMENT', instance: '/api/v1/documents', requestId: 'r1' });
    expect(repository.store).toHaveBeenCalledTimes(1);

    repository.store.mockClear();
    expect(await codeOf(service.execute(CALL, async () => general(() => Promise.reject(AppError.validation([])))))).toBe('VALIDATION_ERROR');
    await expect(service.execute(CALL, async () => general(() => Promise.reject(new Error('boom'))))).rejects.toThrow('boom');
    expect(repository.store).not.toHaveBeenCalled();
  });

  it('refuses a request it cannot prepare only once the key is known to be free (CONTRACT order)', async () => {
    const invalid = () => Promise.reject(AppError.validation([{ field: 'externalId', message: 'is required' }]));
    const free = serviceWith({});
    expect(await codeOf(free.service.execute(CALL, invalid))).toBe('VALIDATION_ERROR');
    expect(free.repository.claim).not.toHaveBeenCalled();

    const stored = serviceWith({ find: jest.fn().mockResolvedValue(STORED) });
    expect(await stored.service.execute(CALL, invalid)).toMatchObject({ replayed: true, status: 201 });
    const busy = serviceWith({ inUse: jest.fn().mockResolvedValue(true) });
    expect(await codeOf(busy.service.execute(CALL, invalid))).toBe('IDEMPOTENCY_KEY_IN_USE');
  });

  it('takes an answer known in advance as stored, and goes the general way only when told to', async () => {
    const done = serviceWith({});
    expect(await done.service.execute(CALL, async () => inAdvance({ result: 'done', stored: '{"id":"d2","at":"now"}' }))).toEqual({
      status: 201,
      body: '{"id":"d2","at":"now"}',
      location: null,
      replayed: false,
    });
    expect(done.repository.claim).not.toHaveBeenCalled();

    const notClaimed = serviceWith({});
    const run = jest.fn();
    expect(await notClaimed.service.execute(CALL, async () => inAdvance({ result: 'not_claimed', stored: STORED }, run))).toMatchObject({ replayed: true, body: STORED.body });
    expect(await codeOf(notClaimed.service.execute(CALL, async () => inAdvance({ result: 'not_claimed', stored: null }, run)))).toBe('IDEMPOTENCY_KEY_IN_USE');
    expect(run).not.toHaveBeenCalled();
    expect(notClaimed.repository.find).not.toHaveBeenCalled();

    const generalWay = serviceWith({});
    run.mockResolvedValue({ id: 'd2', paid: true });
    expect(await generalWay.service.execute(CALL, async () => inAdvance({ result: 'general' }, run))).toMatchObject({ body: '{"id":"d2","paid":true}', replayed: false });
    expect(generalWay.repository.claim).toHaveBeenCalledTimes(1);
  });
});
