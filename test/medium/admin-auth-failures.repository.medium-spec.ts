import { AdminAuthFailureEntity } from '../../src/admin/admin-auth-failure.entity.js';
import { AdminAuthFailuresRepository } from '../../src/admin/admin-auth-failures.repository.js';
import { mediumModule, Medium } from '../support/medium.js';

describe('AdminAuthFailuresRepository', () => {
  let m: Medium;
  let failures: AdminAuthFailuresRepository;

  beforeAll(async () => {
    m = await mediumModule({ entities: [AdminAuthFailureEntity], providers: [AdminAuthFailuresRepository] });
    failures = m.moduleRef.get(AdminAuthFailuresRepository);
  });
  afterAll(() => m.close());

  it('counts concurrent failures of an address in this minute\u2019s window exactly, and purges old windows', async () => {
    const counts = await Promise.all(Array.from({ length: 12 }, () => failures.countFailure('192.0.2.7')));
    expect(counts.map((c) => c.failures).sort((a, b) => a - b)).toEqual(Array.from({ length: 12 }, (_, i) => i + 1));
    expect(counts.every((c) => c.secondsLeft >= 0 && c.secondsLeft <= 60)).toBe(true);
    expect((await failures.countFailure('192.0.2.7')).failures).toBe(13);
    expect((await failures.countFailure('192.0.2.8')).failures).toBe(1);

    await m.check.query(`INSERT INTO admin_auth_failures (remote_address, window_start, failures) VALUES ('192.0.2.9', now() - interval '2 hours', 50)`);
    await failures.purge();
    expect((await m.check.query(`SELECT remote_address FROM admin_auth_failures ORDER BY remote_address`)).rows.map((r) => r.remote_address)).toEqual([
      '192.0.2.7',
      '192.0.2.8',
    ]);
  });
});
