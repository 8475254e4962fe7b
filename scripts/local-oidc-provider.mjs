// A real OpenID provider (the `oidc-provider` package, a development dependency) on this machine: for trying
// the console's single sign-on without a provider of your own, and for the single sign-on tests.
//
//   npm run sso:local [-- <gateway URL>]      a trial (port SSO_LOCAL_PORT, 4400): prints the gateway's settings
//   node scripts/local-oidc-provider.mjs <port> <client id> <client secret> <redirect uri>[,<redirect uri>…]
//
// Its development sign-in page accepts any login and password: the login becomes the account's `sub`
// and `email`. An email starting with "unverified." comes with `email_verified: false`. Prints
// "READY <issuer>" once it listens. It keeps nothing: every start is a new provider.
import Provider from 'oidc-provider';

import { randomBytes } from 'node:crypto';

/** A trial: the gateway at its default address, a client secret made now. */
function trial(gatewayUrl = 'http://localhost:3000') {
  const gateway = new URL(gatewayUrl);
  const callbacks = [new URL('/admin/auth/callback', gateway).href];
  // The console is as often opened at 127.0.0.1 as at localhost: both are let back in.
  if (gateway.hostname === 'localhost') callbacks.push(new URL('/admin/auth/callback', `${gateway.protocol}//127.0.0.1:${gateway.port || 80}`).href);
  return {
    port: process.env.SSO_LOCAL_PORT ?? '4400',
    clientId: 'tax-document-gateway',
    clientSecret: randomBytes(24).toString('base64url'),
    redirectUris: callbacks.join(','),
    gateway: gateway.origin,
  };
}

const argv = process.argv.slice(2);
const trialRun = argv.length <= 1 ? trial(argv[0]) : null;
const [port, clientId, clientSecret, redirectUris] = trialRun ? [trialRun.port, trialRun.clientId, trialRun.clientSecret, trialRun.redirectUris] : argv;
const issuer = `http://localhost:${port}`;

const provider = new Provider(issuer, {
  clients: [
    {
      client_id: clientId,
      client_secret: clientSecret,
      redirect_uris: redirectUris.split(','),
      grant_types: ['authorization_code'],
      response_types: ['code'],
      token_endpoint_auth_method: 'client_secret_basic',
    },
  ],
  claims: { openid: ['sub'], email: ['email', 'email_verified'] },
  findAccount: (_ctx, id) => ({
    accountId: id,
    claims: () => ({ sub: id, email: id, email_verified: !id.startsWith('unverified.') }),
  }),
  pkce: { required: () => true },
  cookies: { keys: ['a test provider signs its own cookies with this'] },
  features: { devInteractions: { enabled: true } },
  // The tests' one client needs no consent screen: it is granted what it asks for.
  loadExistingGrant: async (ctx) => {
    const grant = new ctx.oidc.provider.Grant({ clientId: ctx.oidc.client.clientId, accountId: ctx.oidc.session.accountId });
    grant.addOIDCScope('openid email');
    await grant.save();
    return grant;
  },
});
// Quiet: the tests read only the READY line.
provider.on('server_error', (_ctx, error) => process.stderr.write(`provider error: ${error.message}\n`));

provider.listen(Number(port), () => {
  process.stdout.write(`READY ${issuer}\n`);
  if (!trialRun) return;
  process.stdout.write(
    [
      '',
      `A local OpenID provider for trying single sign-on listens at ${issuer} (Ctrl-C stops it).`,
      'Start the gateway in another terminal with:',
      '',
      `  OIDC_ISSUER_URL=${issuer} OIDC_CLIENT_ID=${clientId} OIDC_CLIENT_SECRET=${clientSecret} npm start`,
      '',
      `Create an administrator (README, "An administrator's first day"), open ${trialRun.gateway}/admin, choose`,
      '"Sign in with single sign-on" and sign in at the provider with that email (any password).',
      '',
    ].join('\n'),
  );
});
