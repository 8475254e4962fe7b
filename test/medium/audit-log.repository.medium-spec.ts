import { AuditLogEntity } from '../../src/admin/audit-log.entity.js';
import { AuditLogRepository, NewAuditEntry } from '../../src/admin/audit-log.repository.js';
import { mediumModule, Medium } from '../support/medium.js';

const entry = (overrides: Partial<NewAuditEntry> = {}): NewAuditEntry => ({
  action: 'api_key.created',
  keyId: null,
  source: 'acme-erp',
  remoteAddress: '192.0.2.1',
  actorType: 'bootstrap',
  actorAdminId: null,
  actorEmail: null,
  targetType: null,
  targetId: null,
  changes: null,
  ...overrides,
});

describe('AuditLogRepository', () => {
  let m: Medium;
  let audit: AuditLogRepository;

  beforeAll(async () => {
    m = await mediumModule({ entities: [AuditLogEntity], providers: [AuditLogRepository] });
    audit = m.moduleRef.get(AuditLogRepository);
  });
  afterAll(() => m.close());

  it('writes an entry only when its transaction commits, and pages newest first by action and admin', async () => {
    const admin = '00000000-0000-4000-8000-000000000001';
    await m.dataSource.transaction(async (tx) => {
      await audit.insert(tx, entry());
      await audit.insert(
        tx,
        entry({ action: 'admin.created', actorType: 'token', actorAdminId: admin, actorEmail: 'ada@example.com', targetType: 'admin', targetId: 'x' }),
      );
    });
    await expect(
      m.dataSource.transaction(async (tx) => {
        await audit.insert(tx, entry({ action: 'api_key.revoked' }));
        throw new Error('the change failed');
      }),
    ).rejects.toThrow('the change failed');
    const all = await audit.page({}, 10);
    expect(all.map((e) => e.action)).toEqual(['admin.created', 'api_key.created']);
    expect(all[0]).toMatchObject({
      actorType: 'token',
      actorAdminId: admin,
      actorEmail: 'ada@example.com',
      targetType: 'admin',
      targetId: 'x',
      createdAt: expect.any(Date),
    });
    expect((await audit.page({ action: 'api_key.created' }, 10)).map((e) => e.action)).toEqual(['api_key.created']);
    expect((await audit.page({ adminId: admin }, 10)).map((e) => e.action)).toEqual(['admin.created']);
    expect((await audit.page({ before: all[0].id }, 10)).map((e) => e.id)).toEqual([all[1].id]);
  });
});
