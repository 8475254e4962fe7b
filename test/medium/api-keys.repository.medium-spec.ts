import { DataSource } from 'typeorm';
import { ApiKeyEntity } from '../../src/auth/api-key.entity.js';
import { ApiKeysRepository, NewApiKey } from '../../src/auth/api-keys.repository.js';
import { mediumModule, Medium } from '../support/medium.js';

let n = 0;
const newKey = (overrides: Partial<NewApiKey> = {}): NewApiKey => {
  n += 1;
  return { source: 'acme-erp', name: null, expiresAt: null, keyHash: String(n).padStart(64, '0'), prefix: 'sk_tax_abcde', last4: 'wxyz', ...overrides };
};

describe('ApiKeysRepository', () => {
  let m: Medium;
  let keys: ApiKeysRepository;
  let dataSource: DataSource;

  beforeAll(async () => {
    m = await mediumModule({ entities: [ApiKeyEntity], providers: [ApiKeysRepository] });
    keys = m.moduleRef.get(ApiKeysRepository);
    dataSource = m.dataSource;
  });
  afterAll(() => m.close());

  it('inserts a key and authenticates it by its hash while it is neither revoked nor expired, by the database\u2019s clock', async () => {
    const written = newKey({ name: 'billing' });
    const key = await dataSource.transaction((tx) => keys.insert(tx, written));
    expect(key).toMatchObject({
      source: 'acme-erp',
      name: 'billing',
      revokedAt: null,
      lastUsedAt: null,
      createdAt: expect.any(Date),
      position: expect.stringMatching(/^\d+$/),
    });
    expect(key).not.toHaveProperty('keyHash');
    const hash = written.keyHash;
    expect(await keys.findValidByHash(hash)).toEqual({ id: key.id, source: 'acme-erp', prefix: 'sk_tax_abcde', expiresAt: null });
    expect(await keys.findValidByHash('f'.repeat(64))).toBeNull();

    // Revoked in the future (a rotation's grace period) still works; in the past, it does not.
    await dataSource.transaction((tx) => keys.setRevoked(tx, key, new Date(Date.now() + 60_000), null));
    expect(await keys.findValidByHash(hash)).not.toBeNull();
    await dataSource.transaction((tx) => keys.setRevoked(tx, key, new Date(Date.now() - 1000), null));
    expect(await keys.findValidByHash(hash)).toBeNull();

    const expiring = newKey({ expiresAt: new Date(Date.now() - 1000) });
    await dataSource.transaction((tx) => keys.insert(tx, expiring));
    expect(await keys.findValidByHash(expiring.keyHash)).toBeNull();
  });

  it('pages newest first by creation, of one source or all, with an exact cursor even within one millisecond', async () => {
    const source = `pager-${Date.now()}`;
    // Five keys in one transaction: the same created_at, told apart by id.
    await dataSource.transaction(async (tx) => {
      for (let i = 0; i < 5; i += 1) await keys.insert(tx, newKey({ source }));
    });
    const all = await keys.page(source, null, 10);
    expect(all).toHaveLength(5);
    const walked: string[] = [];
    let before: { position: string; id: string } | null = null;
    for (;;) {
      const page: Awaited<ReturnType<ApiKeysRepository['page']>> = await keys.page(source, before, 2);
      walked.push(...page.map((key) => key.id));
      if (page.length < 2) break;
      before = { position: page[1].position, id: page[1].id };
    }
    expect(walked).toEqual(all.map((key) => key.id));
    expect((await keys.page(undefined, null, 100)).length).toBeGreaterThan(5);
  });

  it('locks a key for its rotation, and records usage without ever moving it back', async () => {
    const key = await dataSource.transaction((tx) => keys.insert(tx, newKey()));
    await expect(keys.findForUpdate(dataSource.manager, key.id)).rejects.toThrow(/transaction/i);
    expect(await dataSource.transaction((tx) => keys.findForUpdate(tx, key.id))).toMatchObject({ id: key.id });
    const later = new Date('2030-01-02T03:04:05.678Z');
    await keys.recordUsage(new Map([[key.id, later]]));
    await keys.recordUsage(new Map([[key.id, new Date('2029-01-01T00:00:00Z')]]));
    expect((await keys.find(key.id))?.lastUsedAt).toEqual(later);
  });
});
