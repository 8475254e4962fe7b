import { ERROR_STATUS } from '../common/error-codes.js';
import { IDEMPOTENCY_KEY_PATTERN, STORED_REFUSALS } from '../idempotency/idempotency.service.js';

/** The refusals a repeat of the request gets again (404, 409 DUPLICATE_DOCUMENT, …), from the set the service stores. */
export const STORED_REFUSALS_TEXT = [...STORED_REFUSALS]
  .sort((a, b) => ERROR_STATUS[a] - ERROR_STATUS[b] || a.localeCompare(b))
  .map((code) => `${ERROR_STATUS[code]} \`${code}\``)
  .join(', ');

export const API_KEY_SCHEME = 'apiKey';
export const ADMIN_TOKEN_SCHEME = 'adminToken';
export const ADMIN_SESSION_SCHEME = 'adminSession';

/** Every tag an operation uses is declared here, with what it groups (the lint tests check both). */
export const API_TAGS = [
  { name: 'api keys', description: 'Check the API key a client application uses.' },
  { name: 'documents', description: 'Tax documents due for payment: submit, read, list and cancel.' },
  { name: 'events', description: "The feed of the source's document changes, oldest first." },
  { name: 'webhooks', description: "The bank's signed payment status notifications." },
  {
    name: 'archive',
    description:
      'The verifiable archive: every feed event sealed into an append-only RFC 9162 Merkle tree, signed checkpoints, and the proofs a client checks on its own.',
  },
  {
    name: 'webhook endpoints',
    description: "Push notifications: the client's HTTPS endpoints that receive the feed's events, signed per Standard Webhooks, and their delivery log.",
  },
  {
    name: 'admin',
    description:
      "Administration for operators: API keys, administrators and their tokens, push endpoints and deliveries, bank events. With an administrator's personal token (`adm_tax_…`), the break-glass ADMIN_TOKEN, or a console session.",
  },
  { name: 'operations', description: 'Liveness and readiness probes.' },
] as const;

// A code span never ends in "$" right before its closing backtick here: @nestjs/swagger builds the
// /docs init script with String.replace, where "$`" in the document inserts text and breaks the script
// (Swagger UI then renders nothing). Double backticks with padding render the same.
export const API_DESCRIPTION = `Submit tax documents due for payment, follow their payment status, and administer API keys.

**Authentication.** Every \`/api/v1\` call carries \`X-API-Key: sk_tax_…\`, a key bound to one source; it sees only
that source's data. \`/admin\` calls carry \`Authorization: Bearer <token>\`: an administrator's personal token
(\`adm_tax_…\`, with that administrator's role) or the break-glass \`ADMIN_TOKEN\`; the admin console sends its session
cookie instead, after single sign-on. The bank webhook is authenticated by its signature; the health probes are public.

**Retrying safely.** Every POST under \`/api/v1\` needs an \`X-Idempotency-Key\` (\`\` ${IDEMPOTENCY_KEY_PATTERN.source} \`\`). The
same key and body again returns the stored answer with \`Idempotent-Replayed: true\` and performs nothing;
the same key with another body is a 422 \`IDEMPOTENCY_KEY_REUSED\`; while the first is still running, a 409
\`IDEMPOTENCY_KEY_IN_USE\` with \`Retry-After\`. Successes and business refusals (${STORED_REFUSALS_TEXT}) are
stored; 401, 409 \`IDEMPOTENCY_KEY_IN_USE\`, 422 validation failures, 429 and 5xx are not.

**Errors** are \`application/problem+json\` (RFC 9457) with a machine-readable \`code\`; validation failures name
every bad field in \`errors\`. Checks on a POST run in this order: API key (401), rate limit (429), idempotency
key (422), replay or conflict, body (422), the operation. Every response carries \`X-Request-Id\`.

**Bodies** are JSON; unknown fields are refused (422). Strings must not contain NUL characters, and object keys
must not be \`constructor\`, \`__proto__\` or \`prototype\`. Timestamps are ISO 8601 UTC with milliseconds; money is a
decimal string.`;
