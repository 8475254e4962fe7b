import { DataSource } from 'typeorm';
import { AdminEntity, AdminOidcLoginEntity, AdminSessionEntity, AdminTokenEntity } from '../../src/admin/admin.entity.js';
import { AdminsRepository } from '../../src/admin/admins.repository.js';
import { mediumModule, Medium } from '../support/medium.js';

let n = 0;
const unique = () => `${++n}-${Date.now()}`;
const hash = () => unique().padStart(64, '0');

describe('AdminsRepository', () => {
  let m: Medium;
  let admins: AdminsRepository;
  let dataSource: DataSource;
  const newAdmin = (email = `ada-${unique()}@example.com`) => dataSource.transaction((tx) => admins.insert(tx, { email, name: 'Ada', role: 'admin' }));

  beforeAll(async () => {
    m = await mediumModule({ entities: [AdminEntity, AdminTokenEntity, AdminSessionEntity, AdminOidcLoginEntity], providers: [AdminsRepository] });
    admins = m.moduleRef.get(AdminsRepository);
    dataSource = m.dataSource;
  });
  afterAll(() => m.close());

  it('inserts an admin, and nothing for an email taken in any case', async () => {
    const email = `Grace-${unique()}@Example.com`;
    const admin = await newAdmin(email);
    expect(admin).toMatchObject({ email, name: 'Ada', role: 'admin', disabledAt: null, lastSeenAt: null, position: expect.stringMatching(/^\d+$/) });
    expect(await newAdmin(email.toLowerCase())).toBeNull();
    expect(await admins.findEnabledByEmail(email.toUpperCase())).toMatchObject({ id: admin!.id });
    const disabled = await dataSource.transaction((tx) => admins.update(tx, admin!.id, { disabledAt: new Date(), role: 'viewer', name: undefined }));
    expect(disabled).toMatchObject({ role: 'viewer', name: 'Ada', disabledAt: expect.any(Date) });
    expect(await admins.findEnabledByEmail(email)).toBeNull();
  });

  it('pages admins oldest first with an exact cursor', async () => {
    for (let i = 0; i < 3; i += 1) await newAdmin();
    const all = await admins.page(null, 100);
    const first = await admins.page(null, 2);
    expect(first.map((a) => a.id)).toEqual(all.slice(0, 2).map((a) => a.id));
    const next = await admins.page({ position: first[1].position, id: first[1].id }, 100);
    expect(next.map((a) => a.id)).toEqual(all.slice(2).map((a) => a.id));
  });

  it('authenticates a live token of an enabled admin, noting its use at most once a minute, and never a revoked one', async () => {
    const admin = (await newAdmin())!;
    const tokenHash = hash();
    const token = await dataSource.transaction((tx) =>
      admins.insertToken(tx, { adminId: admin.id, name: 'laptop', tokenHash, prefix: 'adm_tax_abcd', last4: 'wxyz', expiresAt: null }),
    );
    expect(token).toMatchObject({ adminId: admin.id, revokedAt: null, lastUsedAt: null });
    expect(token).not.toHaveProperty('tokenHash');
    expect(await admins.authenticateToken(tokenHash)).toEqual({ adminId: admin.id, email: admin.email, role: 'admin', expiresAt: null });
    const used = (await admins.tokensOf(admin.id))[0].lastUsedAt;
    expect(used).toEqual(expect.any(Date));
    await admins.authenticateToken(tokenHash);
    expect((await admins.tokensOf(admin.id))[0].lastUsedAt).toEqual(used);

    const revoked = await dataSource.transaction(async (tx) => {
      await admins.findTokenForUpdate(tx, token.id);
      return admins.revokeToken(tx, token.id);
    });
    expect(revoked.revokedAt).toEqual(expect.any(Date));
    // Revoking again keeps the first time.
    expect((await dataSource.transaction((tx) => admins.revokeToken(tx, token.id))).revokedAt).toEqual(revoked.revokedAt);
    expect(await admins.authenticateToken(tokenHash)).toBeNull();
  });

  it('keeps a console session until it ends, goes idle or its admin is disabled', async () => {
    const admin = (await newAdmin())!;
    const tokenHash = hash();
    const id = await dataSource.transaction((tx) => admins.insertSession(tx, { adminId: admin.id, tokenHash, csrfToken: 'csrf', maxSeconds: 3600 }));
    const { rows } = await m.check.query(`SELECT (expires_at - created_at)::text AS lifetime FROM admin_sessions WHERE id = $1`, [id]);
    expect(rows).toEqual([{ lifetime: '01:00:00' }]);
    expect(await admins.authenticateSession(tokenHash, 1800)).toEqual({
      sessionId: id,
      csrfToken: 'csrf',
      adminId: admin.id,
      email: admin.email,
      role: 'admin',
    });
    await m.check.query(`UPDATE admin_sessions SET last_seen_at = now() - interval '31 minutes' WHERE id = $1`, [id]);
    expect(await admins.authenticateSession(tokenHash, 1800)).toBeNull();
    await m.check.query(`UPDATE admin_sessions SET last_seen_at = now() WHERE id = $1`, [id]);
    await dataSource.transaction((tx) => admins.endSessionsOf(tx, admin.id));
    expect(await admins.authenticateSession(tokenHash, 1800)).toBeNull();
  });

  it('takes a sign-in under way once, and not after it expired; purges what is over', async () => {
    const state = unique();
    await admins.insertLogin({ state, nonce: 'n', codeVerifier: 'v', remoteAddress: '192.0.2.30' }, 20);
    expect(await admins.takeLogin(state)).toEqual({ nonce: 'n', codeVerifier: 'v' });
    expect(await admins.takeLogin(state)).toBeNull();
    const expired = unique();
    await admins.insertLogin({ state: expired, nonce: 'n', codeVerifier: 'v', remoteAddress: '192.0.2.30' }, 20);
    await m.check.query(`UPDATE admin_oidc_logins SET expires_at = now() - interval '1 second' WHERE state = $1`, [expired]);
    expect(await admins.takeLogin(expired)).toBeNull();
    const stale = unique();
    await admins.insertLogin({ state: stale, nonce: 'n', codeVerifier: 'v', remoteAddress: '192.0.2.30' }, 20);
    await m.check.query(`UPDATE admin_oidc_logins SET expires_at = now() - interval '1 second' WHERE state = $1`, [stale]);
    await admins.purge();
    expect((await m.check.query(`SELECT count(*)::int AS n FROM admin_oidc_logins WHERE state = $1`, [stale])).rows[0].n).toBe(0);
  });

  it('keeps at most the given number of sign-ins under way per address, exactly, however many start at once; expired ones do not count', async () => {
    const start = (remoteAddress: string) => admins.insertLogin({ state: unique(), nonce: 'n', codeVerifier: 'v', remoteAddress }, 5);
    const results = await Promise.all(Array.from({ length: 12 }, () => start('192.0.2.31')));
    expect(results.filter((r) => r.started)).toHaveLength(5);
    expect(results.find((r) => !r.started)).toEqual({ started: false, secondsLeft: expect.any(Number) });
    const under = async (address: string) =>
      (await m.check.query(`SELECT count(*)::int AS n FROM admin_oidc_logins WHERE remote_address = $1`, [address])).rows[0].n;
    expect(await under('192.0.2.31')).toBe(5);
    // Another address has its own; an expired start frees a place.
    expect((await start('192.0.2.32')).started).toBe(true);
    await m.check.query(
      `UPDATE admin_oidc_logins SET expires_at = now() - interval '1 second' WHERE state IN (SELECT state FROM admin_oidc_logins WHERE remote_address = $1 LIMIT 1)`,
      ['192.0.2.31'],
    );
    expect((await start('192.0.2.31')).started).toBe(true);
    // Refused, it says when the oldest start under way expires: within its ten minutes.
    const refused = await start('192.0.2.31');
    expect(refused.started).toBe(false);
    expect(!refused.started && refused.secondsLeft > 0 && refused.secondsLeft <= 600).toBe(true);
  });
});
