import type { ApiKeyView } from '../auth/api-keys.service.js';
import type { RootCluster } from '../database/root-clusters.js';
import { clustersTable, deliveriesTable, endpointsTable, issuedKey, issuedToken, keysTable, printable, revokedKey, rotatedKey, size, table } from './output.js';

const key: ApiKeyView = {
  id: '7c9e6679-7425-40de-944b-e07fc1f90ae7',
  source: 'acme-erp',
  name: 'ERP prod',
  prefix: 'sk_tax_abcde',
  last4: 'WXYZ',
  status: 'ACTIVE',
  createdAt: '2026-11-21T10:15:30.123Z',
  expiresAt: null,
  revokedAt: null,
  lastUsedAt: null,
};
const secret = 'sk_tax_abcde0123456789012345678901234567890WXYZ';

describe('human output', () => {
  it('aligns table columns and trims the line ends', () => {
    expect(
      table(
        ['A', 'LONGER'],
        [
          ['xx', ''],
          ['y', 'z'],
        ],
      ),
    ).toBe('A   LONGER\nxx\ny   z\n');
  });

  it('lists keys with prefix…last4, to the second, never more of the key', () => {
    expect(keysTable([key]).split('\n')).toEqual([
      'ID                                    SOURCE    STATUS  KEY                NAME      CREATED               EXPIRES  LAST USED',
      '7c9e6679-7425-40de-944b-e07fc1f90ae7  acme-erp  ACTIVE  sk_tax_abcde…WXYZ  ERP prod  2026-11-21T10:15:30Z  never    never',
      '',
    ]);
    // A rotated key in its grace period: active, and the list says until when.
    expect(keysTable([{ ...key, revokedAt: '2026-11-21T11:15:30.123Z' }]).split('\n')[1]).toBe(
      '7c9e6679-7425-40de-944b-e07fc1f90ae7  acme-erp  ACTIVE until 2026-11-21T11:15:30Z  sk_tax_abcde…WXYZ  ERP prod  2026-11-21T10:15:30Z  never    never',
    );
    expect(keysTable([{ ...key, status: 'REVOKED', revokedAt: '2026-11-21T11:15:30.123Z' }])).toMatch(/ {2}REVOKED {2}/);
    expect(keysTable([], 'acme-erp')).toBe('No API keys for source acme-erp.\n');
    expect(keysTable([])).toBe('No API keys.\n');
  });

  it('shows a new key or token once, with the warning that it is never shown again', () => {
    const issued = issuedKey({ ...key, key: secret });
    expect(issued).toMatch(/^Issued an API key for source acme-erp\.\n\n {2}id {7}7c9e6679-/);
    expect(issued).toContain(`\n  ${secret}\n`);
    expect(issued).toContain('This key is shown now and never again');
    expect(rotatedKey('old-id', { ...key, key: secret }, 300)).toMatch(
      /^Rotated API key old-id \(source acme-erp\)\. The old key keeps working for 300 s more/,
    );
    expect(rotatedKey('old-id', { ...key, key: secret }, 0)).toContain('The old key has stopped working.');
    const token = issuedToken({
      id: 't1',
      adminId: 'a1',
      name: null,
      prefix: 'adm_tax_abcd',
      last4: 'WXYZ',
      createdAt: key.createdAt,
      expiresAt: null,
      revokedAt: null,
      lastUsedAt: null,
      token: 'adm_tax_secret',
    });
    expect(token).toContain('\n  adm_tax_secret\n');
    expect(token).toContain('This token is shown now and never again');
  });

  it('tells a revocation from one that had happened before', () => {
    expect(revokedKey({ ...key, revokedAt: '2026-11-21T11:00:00.000Z' }, false)).toBe(
      'Revoked API key 7c9e6679-7425-40de-944b-e07fc1f90ae7 (acme-erp, sk_tax_abcde…WXYZ): requests with it get 401 from now on.\n',
    );
    expect(revokedKey({ ...key, revokedAt: '2026-11-21T11:00:00.000Z' }, true)).toContain('was already revoked at 2026-11-21T11:00:00Z');
  });

  it('never lets a stored value drive the terminal', () => {
    expect(printable('evil\u001b[2J\u0007name\u009b')).toBe('evil?[2J?name?');
    const endpoint = {
      id: 'e1',
      source: 'acme-erp',
      url: 'https://x.example/\u001b[31m',
      description: null,
      eventTypes: ['document.created' as const],
      enabled: false,
      disabledReason: 'admin' as const,
      createdAt: key.createdAt,
      updatedAt: key.createdAt,
    };
    expect(endpointsTable([endpoint])).toContain('disabled (admin)  https://x.example/?[31m  document.created');
    expect(keysTable([{ ...key, name: 'a\nb' }])).toContain(' a?b ');
  });

  it('lists deliveries with the last result as a status code or an error', () => {
    const delivery = {
      id: '17',
      eventId: '42',
      eventType: 'document.created',
      status: 'pending' as const,
      attempts: 2,
      lastAttemptAt: '2026-11-21T10:16:00.000Z',
      lastResponseStatus: null,
      lastError: 'timeout',
      nextAttemptAt: '2026-11-21T10:21:00.000Z',
      source: 'acme-erp',
      endpointId: 'e1',
      endpointUrl: 'https://erp.example/hooks',
      documentId: null,
    };
    const [header, row] = deliveriesTable([delivery, { ...delivery, id: '18', lastResponseStatus: 500, lastError: 'http_error' }])
      .split('\n')
      .slice(0, 2);
    expect(header).toMatch(/^ID\s+SOURCE\s+STATUS\s+EVENT\s+ATTEMPTS\s+LAST ATTEMPT\s+RESULT\s+NEXT ATTEMPT\s+DOCUMENT\s+ENDPOINT$/);
    expect(row).toMatch(
      /^17\s+acme-erp\s+pending\s+document\.created\s+2\s+2026-11-21T10:16:00Z\s+timeout\s+2026-11-21T10:21:00Z\s+-\s+https:\/\/erp\.example\/hooks$/,
    );
    expect(deliveriesTable([delivery, { ...delivery, id: '18', lastResponseStatus: 500 }])).toMatch(/\n18 .* 500 /);
  });

  it('lists clusters with their state, size as du would say it, postmaster and DATA_DIR, and names a recorded DATA_DIR without its link', () => {
    const base = { linkedFrom: [], postmasterPid: null, dataDirs: null };
    const clusters: RootCluster[] = [
      {
        ...base,
        id: '1111111111111111',
        path: '/c/1111111111111111',
        state: 'linked',
        bytes: 49_283_072,
        dataDirs: ['/srv/old', '/srv/a'],
        linkedFrom: ['/srv/a'],
      },
      { ...base, id: '2222222222222222', path: '/c/2222222222222222', state: 'running', bytes: 2048, dataDirs: ['/tmp/x\u001b[2J'], postmasterPid: 42 },
      { ...base, id: '3333333333333333', path: '/c/3333333333333333', state: 'unrecorded', bytes: 0 },
    ];
    expect(clustersTable(clusters, '/c').split('\n')).toEqual([
      'ID                STATE       SIZE      POSTMASTER  DATA_DIR',
      '1111111111111111  linked      47.0 MiB  -           /srv/a',
      '2222222222222222  running     2.0 KiB   pid 42      /tmp/x?[2J (no link)',
      '3333333333333333  unrecorded  0 B       -           -',
      '',
    ]);
    expect(clustersTable([], '/c')).toBe('No clusters in /c.\n');
    expect([1023, 1024, 1536 * 1024 * 1024].map(size)).toEqual(['1023 B', '1.0 KiB', '1.5 GiB']);
  });
});
