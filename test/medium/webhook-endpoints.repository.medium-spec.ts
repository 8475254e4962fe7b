import { DataSource } from 'typeorm';
import { WebhookEndpointEntity } from '../../src/outbound-webhooks/webhook-endpoint.entity.js';
import { NewEndpoint, WebhookEndpointsRepository } from '../../src/outbound-webhooks/webhook-endpoints.repository.js';
import { mediumModule, Medium } from '../support/medium.js';
import { waitFor } from '../support/processes.js';

let n = 0;
const endpoint = (overrides: Partial<NewEndpoint> = {}): NewEndpoint => {
  n += 1;
  return {
    source: 'acme-erp',
    url: `https://client.example/hook/${n}`,
    description: null,
    eventTypes: ['document.created'],
    secret: `whsec_secret${n}`,
    ...overrides,
  };
};

describe('WebhookEndpointsRepository', () => {
  let m: Medium;
  let endpoints: WebhookEndpointsRepository;
  let dataSource: DataSource;

  beforeAll(async () => {
    // A transaction below waits for a lock for as long as the test takes to look: no lock timeout may end it first.
    m = await mediumModule({ entities: [WebhookEndpointEntity], providers: [WebhookEndpointsRepository], config: { DB_LOCK_TIMEOUT_MS: '120000' } });
    endpoints = m.moduleRef.get(WebhookEndpointsRepository);
    dataSource = m.dataSource;
  });
  afterAll(() => m.close());

  it('inserts an endpoint, and reads it back without its secrets', async () => {
    const created = await dataSource.transaction((tx) => endpoints.insert(tx, endpoint({ description: 'ERP' })));
    expect(created).toMatchObject({ source: 'acme-erp', description: 'ERP', eventTypes: ['document.created'], enabled: true, disabledReason: null });
    for (const read of [created, await endpoints.find('acme-erp', created.id), (await endpoints.list('acme-erp')).find((e) => e.id === created.id)]) {
      expect(read).not.toHaveProperty('secret');
      expect(read).not.toHaveProperty('previousSecret');
    }
    expect(await endpoints.find('another-source', created.id)).toBeNull();
    expect((await m.check.query(`SELECT secret FROM webhook_endpoints WHERE id = $1`, [created.id])).rows[0].secret).toMatch(/^whsec_secret/);
  });

  it('counts a source\u2019s endpoints under its lock, which makes a second counter wait', async () => {
    const source = `counted-${Date.now()}`;
    await dataSource.transaction((tx) => endpoints.insert(tx, endpoint({ source })));
    const holder = dataSource.createQueryRunner();
    await holder.startTransaction();
    await endpoints.lockSource(holder.manager, source);
    let counted: number | null = null;
    const second = dataSource.transaction(async (tx) => {
      await endpoints.lockSource(tx, source);
      counted = await endpoints.count(tx, source);
    });
    await waitFor(
      async () =>
        (
          await holder.query(
            `SELECT 1 FROM pg_locks WHERE locktype = 'advisory' AND NOT granted AND database = (SELECT oid FROM pg_database WHERE datname = current_database())`,
          )
        ).length === 1,
      'the second transaction to wait for the lock',
    );
    expect(counted).toBeNull();
    await endpoints.insert(holder.manager, endpoint({ source }));
    await holder.commitTransaction();
    await holder.release();
    await second;
    expect(counted).toBe(2);
  });

  it('changes only the fields given, keeps updatedAt current, rotates the secret and deletes', async () => {
    const created = await dataSource.transaction((tx) => endpoints.insert(tx, endpoint({ description: 'kept' })));
    const changed = await dataSource.transaction((tx) => endpoints.update(tx, created.id, { enabled: false, disabledReason: 'client', url: undefined }));
    expect(changed).toMatchObject({ url: created.url, description: 'kept', enabled: false, disabledReason: 'client' });
    expect(changed.updatedAt.getTime()).toBeGreaterThanOrEqual(created.updatedAt.getTime());

    const rotated = await dataSource.transaction((tx) => endpoints.rotateSecret(tx, 'acme-erp', created.id, 'whsec_new', 3600));
    expect(rotated).toMatchObject({ id: created.id });
    const { rows } = await m.check.query(
      `SELECT secret, previous_secret, (previous_secret_expires_at - now()) > interval '59 minutes' AS grace FROM webhook_endpoints WHERE id = $1`,
      [created.id],
    );
    expect(rows).toEqual([{ secret: 'whsec_new', previous_secret: expect.stringMatching(/^whsec_secret/), grace: true }]);
    expect(await dataSource.transaction((tx) => endpoints.rotateSecret(tx, 'another-source', created.id, 'whsec_x', 1))).toBeNull();

    expect(await dataSource.transaction((tx) => endpoints.delete(tx, 'another-source', created.id))).toBe(false);
    expect(await dataSource.transaction((tx) => endpoints.delete(tx, 'acme-erp', created.id))).toBe(true);
    expect(await endpoints.findById(created.id)).toBeNull();
  });

  it('pages every source\u2019s endpoints for administrators, newest first, with an exact cursor', async () => {
    const source = `admin-page-${Date.now()}`;
    await dataSource.transaction(async (tx) => {
      for (let i = 0; i < 3; i += 1) await endpoints.insert(tx, endpoint({ source }));
    });
    const all = await endpoints.pageForAdmin(source, null, 10);
    expect(all).toHaveLength(3);
    const first = await endpoints.pageForAdmin(source, null, 2);
    const rest = await endpoints.pageForAdmin(source, { position: first[1].position, id: first[1].id }, 10);
    expect([...first, ...rest].map((e) => e.id)).toEqual(all.map((e) => e.id));
    expect((await endpoints.findAll({ source })).length).toBe(3);
  });
});
