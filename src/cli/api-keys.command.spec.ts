import { parseCommand, UsageError } from './api-keys.command';

describe('parseCommand', () => {
  it('turns a valid create into the REST API DTO, validated by the same pipe', async () => {
    await expect(parseCommand(['api-keys', 'create', '--source', 'acme-erp', '--name', 'ERP prod', '--expires-at', '2031-01-01T00:00:00Z'])).resolves.toEqual({
      name: 'create',
      input: { source: 'acme-erp', name: 'ERP prod', expiresAt: '2031-01-01T00:00:00Z' },
    });
    await expect(parseCommand(['api-keys', 'list'])).resolves.toEqual({ name: 'list', source: undefined });
    await expect(parseCommand(['api-keys', 'revoke', 'some-id'])).resolves.toEqual({ name: 'revoke', id: 'some-id' });
  });

  it('reports every bad field under its flag name, one per line', async () => {
    const error = await parseCommand(['api-keys', 'create', '--source', 'A!', '--expires-at', 'soon']).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(UsageError);
    expect((error as Error).message.split('\n')).toEqual([
      '--source must be 2-63 characters of a-z, 0-9 and -, starting with a letter or digit',
      '--expires-at must be an ISO 8601 date-time',
    ]);
  });

  it.each([
    [['api-keys', 'list', '--source', 'UPPER'], '--source must be a valid source'],
    [['api-keys', 'create', '--name', 'x'], '--source is required'],
    [['api-keys', 'revoke', '--force', 'x'], "Unknown option '--force'"],
    [[], 'no command given'],
    [['api-keys'], 'no api-keys command given'],
  ])('refuses %j', async (args, message) => {
    await expect(parseCommand(args)).rejects.toThrow(message);
  });

  it('answers help wherever it is asked for', async () => {
    for (const args of [['help'], ['--help'], ['api-keys', '-h'], ['api-keys', 'create', '--source', 'x', '--help']]) {
      await expect(parseCommand(args)).resolves.toEqual({ name: 'help' });
    }
  });
});
