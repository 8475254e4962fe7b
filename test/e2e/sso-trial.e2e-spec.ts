import { freePort } from '../../src/database/embedded-postgres.js';
import { createTestDatabase, dropTestDatabase } from '../support/database.js';
import { Spawned, spawnNode, startGateway, waitFor } from '../support/processes.js';

/**
 * `npm run sso:local`, as the README's first day runs it: a local OpenID provider whose printed settings,
 * pasted as they are, give a gateway whose sign-in the provider accepts.
 */
describe('a local single sign-on trial (npm run sso:local)', () => {
  const children: Spawned[] = [];
  let databaseUrl: string | undefined;

  afterAll(async () => {
    for (const child of children) {
      if (child.child.exitCode === null) child.child.kill('SIGTERM');
      await child.exited;
    }
    if (databaseUrl) await dropTestDatabase(databaseUrl);
  });

  it('prints settings that a gateway starts with, and the provider takes its sign-in', async () => {
    const [providerPort, gatewayPort] = [await freePort(), await freePort()];
    const gatewayUrl = `http://127.0.0.1:${gatewayPort}`;
    const provider = spawnNode(['scripts/local-oidc-provider.mjs', gatewayUrl], { SSO_LOCAL_PORT: String(providerPort) });
    children.push(provider);
    const line = await waitFor(
      async () => /^ {2}(OIDC_ISSUER_URL=\S+ OIDC_CLIENT_ID=\S+ OIDC_CLIENT_SECRET=\S+) npm start$/m.exec(provider.output())?.[1],
      'the settings to paste',
    );
    const settings = Object.fromEntries(line.split(' ').map((pair) => pair.split('=') as [string, string]));
    expect(settings.OIDC_ISSUER_URL).toBe(`http://localhost:${providerPort}`);

    databaseUrl = await createTestDatabase();
    const gateway = startGateway({
      ...settings,
      DATABASE_URL: databaseUrl,
      PORT: String(gatewayPort),
      HOST: '127.0.0.1',
      ADMIN_TOKEN: 'sso-trial-admin-token-0123456789',
      BANK_WEBHOOK_SECRET: 'sso-trial-bank-webhook-secret-0123456789',
    });
    children.push(gateway);
    await waitFor(
      async () => (await fetch(`${gatewayUrl}/health/ready`)).ok || (gateway.child.exitCode !== null && Promise.reject(new Error(gateway.output()))),
      'the gateway',
    );
    expect(await (await fetch(`${gatewayUrl}/admin/auth/config`)).json()).toEqual({ sso: true });

    // The gateway sends the browser to the provider, which accepts the client and its redirect URI: it
    // answers with its sign-in page, not an error.
    const login = await fetch(`${gatewayUrl}/admin/auth/login`, { redirect: 'manual' });
    expect(login.status).toBe(302);
    const authorize = new URL(login.headers.get('location')!);
    expect(authorize.origin).toBe(settings.OIDC_ISSUER_URL);
    expect(authorize.searchParams.get('redirect_uri')).toBe(`${gatewayUrl}/admin/auth/callback`);
    const atProvider = await fetch(authorize, { redirect: 'manual' });
    expect(atProvider.status).toBe(303);
    const interaction = await fetch(new URL(atProvider.headers.get('location')!, authorize), { headers: { cookie: cookiesOf(atProvider) } });
    expect(interaction.status).toBe(200);
    expect(await interaction.text()).toMatch(/<title>Sign-in<\/title>[\s\S]*name="login"/);
  });
});

/** The cookies a response set, as a request's Cookie header. */
function cookiesOf(res: Response): string {
  return res.headers
    .getSetCookie()
    .map((cookie) => cookie.split(';')[0])
    .join('; ');
}
