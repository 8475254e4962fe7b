import { UsageError } from './exit-codes.js';
import { buildProgram, leavesOf, parseCommandLine } from './program.js';

function capture() {
  const io = { stdout: '', stderr: '', out: (text: string) => (io.stdout += text), err: (text: string) => (io.stderr += text) };
  return io;
}

const parse = (argv: string[]) => parseCommandLine(argv, capture());
const failure = (argv: string[]) =>
  parse(argv).then(
    () => {
      throw new Error(`${argv.join(' ')} was accepted`);
    },
    (error: unknown) => error as UsageError,
  );

describe('parseCommandLine', () => {
  it.each([
    [
      ['keys', 'issue', '--source', 'acme-erp', '--name', 'ERP prod', '--expires-at', '2031-01-01T00:00:00Z'],
      { name: 'keys issue', input: { source: 'acme-erp', name: 'ERP prod', expiresAt: '2031-01-01T00:00:00Z' } },
    ],
    [['keys', 'list'], { name: 'keys list', paging: { limit: 50, all: false } }],
    [
      ['keys', 'list', '--source', 'acme-erp', '--limit', '5', '--cursor', 'abc'],
      { name: 'keys list', source: 'acme-erp', paging: { limit: 5, cursor: 'abc', all: false } },
    ],
    [['keys', 'list', '--all', '--limit', '200'], { name: 'keys list', paging: { limit: 200, all: true } }],
    [['keys', 'rotate', 'k1'], { name: 'keys rotate', id: 'k1', gracePeriodSeconds: 0 }],
    [['keys', 'rotate', 'k1', '--grace-period-seconds', '3600'], { name: 'keys rotate', id: 'k1', gracePeriodSeconds: 3600 }],
    [['keys', 'revoke', 'k1'], { name: 'keys revoke', id: 'k1' }],
    [
      ['admins', 'create', '--email', 'ada@example.com', '--role', 'operator'],
      { name: 'admins create', input: { email: 'ada@example.com', role: 'operator' } },
    ],
    [['admins', 'list', '--limit', '2'], { name: 'admins list', paging: { limit: 2, all: false } }],
    [['admins', 'update', 'a1', '--role', 'viewer', '--name', 'Ada'], { name: 'admins update', id: 'a1', change: { role: 'viewer', name: 'Ada' } }],
    [['admins', 'update', 'a1', '--no-name', '--disable'], { name: 'admins update', id: 'a1', change: { name: null, disabled: true } }],
    [['admins', 'update', 'a1', '--enable'], { name: 'admins update', id: 'a1', change: { disabled: false } }],
    [['admins', 'tokens', 'issue', 'a1', '--name', 'laptop'], { name: 'admins tokens issue', adminId: 'a1', input: { name: 'laptop' } }],
    [['admins', 'tokens', 'list', 'a1'], { name: 'admins tokens list', adminId: 'a1' }],
    [['admins', 'tokens', 'revoke', 't1'], { name: 'admins tokens revoke', tokenId: 't1' }],
    [['endpoints', 'list', '--source', 'acme-erp'], { name: 'endpoints list', source: 'acme-erp', paging: { limit: 50, all: false } }],
    [['endpoints', 'enable', 'e1'], { name: 'endpoints enable', id: 'e1' }],
    [['endpoints', 'disable', 'e1'], { name: 'endpoints disable', id: 'e1' }],
    [['deliveries', 'list'], { name: 'deliveries list', filter: {}, paging: { limit: 50, all: false } }],
    [
      ['deliveries', 'list', '--source', 'acme-erp', '--status', 'failed', '--attention', '--document-id', '7c9e6679-7425-40de-944b-e07fc1f90ae7'],
      {
        name: 'deliveries list',
        filter: { source: 'acme-erp', status: 'failed', attention: true, documentId: '7c9e6679-7425-40de-944b-e07fc1f90ae7' },
        paging: { limit: 50, all: false },
      },
    ],
    [['deliveries', 'retry', '17'], { name: 'deliveries retry', id: '17' }],
    [['clusters', 'list'], { name: 'clusters list', dir: '/var/lib/tax-document-gateway' }],
    [['clusters', 'prune'], { name: 'clusters prune', dir: '/var/lib/tax-document-gateway', yes: false, unrecorded: false }],
    [['clusters', 'prune', '--dir', '/srv/copy', '--yes', '--unrecorded'], { name: 'clusters prune', dir: '/srv/copy', yes: true, unrecorded: true }],
    [
      ['clusters', 'prune', '0123456789abcdef', '--yes'],
      { name: 'clusters prune', dir: '/var/lib/tax-document-gateway', yes: true, unrecorded: false, cluster: '0123456789abcdef' },
    ],
    // The names of the first CLI keep working for the scripts that use them.
    [['api-keys', 'create', '--source', 'acme-erp'], { name: 'keys issue', input: { source: 'acme-erp' } }],
  ])('%j', async (argv, command) => {
    await expect(parse(argv)).resolves.toEqual({ kind: 'run', command, json: false });
  });

  it('takes --json on every command that runs something, and only there', async () => {
    const program = buildProgram(capture(), () => undefined);
    const leaves = leavesOf(program);
    expect(leaves).toHaveLength(19);
    for (const leaf of leaves) expect(leaf.options.map((o) => o.long)).toContain('--json');
    for (const group of [program, ...program.commands.filter((c) => c.commands.length)]) expect(group.options.map((o) => o.long)).not.toContain('--json');
    await expect(parse(['deliveries', 'retry', '17', '--json'])).resolves.toEqual({ kind: 'run', command: { name: 'deliveries retry', id: '17' }, json: true });
    await expect(parse(['archive', 'verify', '--state', 'kept.txt'])).resolves.toEqual({
      kind: 'run',
      command: { name: 'archive verify', state: 'kept.txt' },
      json: false,
    });
    // With --file, an export is verified with no database.
    await expect(parse(['archive', 'verify', '--file', 'a.jsonl', '--key', 'k+1+A', '--json'])).resolves.toEqual({
      kind: 'run',
      command: { name: 'archive verify file', file: 'a.jsonl', key: 'k+1+A' },
      json: true,
    });
    await expect(parse(['archive', 'export', 'out.jsonl'])).resolves.toEqual({
      kind: 'run',
      command: { name: 'archive export', file: 'out.jsonl' },
      json: false,
    });
  });

  it.each([
    [
      ['keys', 'issue', '--source', 'A!', '--expires-at', 'soon'],
      [
        { field: '--source', message: 'must be 2-63 characters of a-z, 0-9 and -, starting with a letter or digit' },
        { field: '--expires-at', message: 'must be an ISO 8601 date-time' },
      ],
    ],
    [['keys', 'issue', '--source', 'acme-erp', '--name', ''], [{ field: '--name', message: 'must be longer than or equal to 1 characters' }]],
    [
      ['keys', 'list', '--source', 'UPPER', '--limit', '500'],
      [
        { field: '--source', message: 'must be a valid source' },
        { field: '--limit', message: 'must be an integer from 1 to 200' },
      ],
    ],
    [['keys', 'list', '--limit', '0'], [{ field: '--limit', message: 'must be an integer from 1 to 200' }]],
    [['keys', 'list', '--limit', 'ten'], [{ field: '--limit', message: 'must be an integer from 1 to 200' }]],
    [['keys', 'rotate', 'k1', '--grace-period-seconds', '86401'], [{ field: '--grace-period-seconds', message: 'must not be greater than 86400' }]],
    [['keys', 'rotate', 'k1', '--grace-period-seconds', '1.5'], [{ field: '--grace-period-seconds', message: 'must be an integer' }]],
    [
      ['admins', 'create', '--email', 'nope', '--role', 'boss'],
      [
        { field: '--email', message: 'must be an email address' },
        { field: '--role', message: 'must be one of viewer, operator, admin' },
      ],
    ],
    [['admins', 'tokens', 'issue', 'a1', '--expires-at', 'tomorrow'], [{ field: '--expires-at', message: 'must be an ISO 8601 date-time' }]],
    [
      ['deliveries', 'list', '--status', 'lost', '--document-id', 'x'],
      [
        { field: '--status', message: 'must be one of pending, succeeded, failed' },
        { field: '--document-id', message: 'must be a UUID' },
      ],
    ],
  ])('refuses %j with the API validation rules, under the flag names', async (argv, errors) => {
    const error = await failure(argv);
    expect(error).toBeInstanceOf(UsageError);
    expect(error.errors).toEqual(errors);
    expect(error.help).toBe(`Run 'tdg ${argv.slice(0, argv[0] === 'admins' && argv[1] === 'tokens' ? 3 : 2).join(' ')} --help' for usage.`);
  });

  it.each([
    [['frobnicate'], "unknown command 'frobnicate'"],
    [['keys', 'issue'], "required option '--source <source>' not specified"],
    [['keys', 'issue', '--source'], "option '--source <source>' argument missing"],
    [['keys', 'list', '--bogus'], "unknown option '--bogus'"],
    [['keys', 'revoke'], "missing required argument 'id'"],
    [['keys', 'revoke', 'a', 'b'], "too many arguments for 'revoke'. Expected 1 argument but got 2."],
    [['keys', 'list', '--all', '--cursor', 'c'], "option '--cursor <cursor>' cannot be used with option '--all'"],
    [['admins', 'update', 'a1'], 'nothing to change: give --role, --name, --no-name, --disable or --enable'],
    [['admins', 'update', 'a1', '--disable', '--enable'], "option '--disable' cannot be used with option '--enable'"],
  ])('refuses %j: %s', async (argv, message) => {
    const error = await failure(argv);
    expect(error).toBeInstanceOf(UsageError);
    expect(error.message).toBe(message);
  });

  it('answers a group without its command with the group help', async () => {
    const none = await failure([]);
    expect(none.message).toBe('no command given');
    expect(none.help).toMatch(/^Usage: tdg \[options\] \[command\]/);
    const tokens = await failure(['admins', 'tokens']);
    expect(tokens.message).toBe('tdg admins tokens needs a command');
    expect(tokens.help).toMatch(/^Usage: tdg admins tokens \[options\] \[command\][\s\S]*issue \[options\] <admin-id>[\s\S]*revoke \[options\] <token-id>/);
  });

  it('has help for every command that runs something, naming its options and --json', async () => {
    for (const leaf of leavesOf(buildProgram(capture(), () => undefined))) {
      const path: string[] = [];
      for (let c: typeof leaf | null = leaf; c?.parent; c = c.parent) path.unshift(c.name());
      const io = capture();
      await expect(parseCommandLine([...path, '--help'], io)).resolves.toEqual({ kind: 'help' });
      expect(io.stdout).toMatch(new RegExp(`^Usage: tdg ${path.join(' ')}(\\|\\w+)? \\[options\\]`));
      expect(io.stdout.replace(/\s+/g, ' ')).toContain(leaf.description());
      for (const option of leaf.options) expect(io.stdout).toContain(option.flags);
      expect(io.stdout).toContain('--json');
    }
  });

  it('prints help on stdout, per command, with the exit codes on the top level', async () => {
    const top = capture();
    await expect(parseCommandLine(['--help'], top)).resolves.toEqual({ kind: 'help' });
    expect(top.stdout).toMatch(/^Usage: tdg \[options\] \[command\]/);
    expect(top.stdout).toMatch(
      /Exit codes:\n {2}0 {2}done\n {2}1 {2}failed[^\n]*\n {2}2 {2}bad command line[^\n]*\n {2}3 {2}no such[^\n]*\n {2}4 {2}the state[^\n]*\n {2}5 {2}the database cannot be used/,
    );
    expect(top.stderr).toBe('');

    const rotate = capture();
    await expect(parseCommandLine(['keys', 'rotate', '--help'], rotate)).resolves.toEqual({ kind: 'help' });
    expect(rotate.stdout).toMatch(/^Usage: tdg keys rotate \[options\] <id>/);
    expect(rotate.stdout).toContain('--grace-period-seconds <seconds>');
    expect(rotate.stdout).toContain('--json');

    const viaHelp = capture();
    await expect(parseCommandLine(['help', 'deliveries'], viaHelp)).resolves.toEqual({ kind: 'help' });
    expect(viaHelp.stdout).toMatch(/^Usage: tdg deliveries \[options\] \[command\]/);
  });
});
