// A real OpenID provider (the `oidc-provider` package) for the single sign-on tests, in a process of its
// own because the package is an ES module that Jest's CommonJS runtime cannot load.
//
//   node test/support/oidc-provider.mjs <port> <client id> <client secret> <redirect uri>[,<redirect uri>…]
//
// Its development sign-in page accepts any login and password: the login becomes the account's `sub`
// and `email`. An email starting with "unverified." comes with `email_verified: false`. Prints
// "READY <issuer>" once it listens.
import Provider from 'oidc-provider';

const [port, clientId, clientSecret, redirectUris] = process.argv.slice(2);
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

provider.listen(Number(port), () => process.stdout.write(`READY ${issuer}\n`));
