import type { INestApplication } from '@nestjs/common';
import { DocumentBuilder, OpenAPIObject, SwaggerModule } from '@nestjs/swagger';
import type { OperationObject, ParameterObject, PathItemObject, ReferenceObject, ResponseObject, SchemaObject } from '@nestjs/swagger';
import { EXTERNAL_API_PREFIX } from '../auth/api-key.guard.js';
import { ErrorCode } from '../common/error-codes.js';
import { byStatus, ProblemContext, problemCodesOf, ProblemDto, problemResponse } from '../common/problem.dto.js';
import { IDEMPOTENCY_KEY_LENGTH, IDEMPOTENCY_KEY_PATTERN, STORED_REFUSALS } from '../idempotency/idempotency.service.js';
import { SESSION_COOKIE } from '../admin/admin-session.js';
import { ADMIN_SESSION_SCHEME, ADMIN_TOKEN_SCHEME, API_DESCRIPTION, API_KEY_SCHEME, API_TAGS, STORED_REFUSALS_TEXT } from './api-description.js';

const METHODS = ['get', 'put', 'post', 'delete', 'options', 'head', 'patch', 'trace'] as const;
const METHODS_WITH_BODY: ReadonlySet<string> = new Set(['post', 'put', 'patch']);

export interface OpenApiOptions {
  /**
   * Routes that verify a signature over their raw body before reading it: their body errors are worded
   * as the bank webhook's. They still refuse a signed body that is not UTF-8 JSON with 415.
   */
  rawBodyRoutes: readonly string[];
}

const ref = ($ref: string): ReferenceObject => ({ $ref });

/**
 * Builds the document from the decorators, then adds what the global guard, interceptor, hooks and
 * pipe do to every route of a kind, keyed on the same constants they use, so a new route is
 * documented as it behaves without repeating those rules on it:
 * - every route under /api/v1/: the API key, 401, 429 and 503 (ApiKeyGuard);
 * - every POST under /api/v1/: X-Idempotency-Key, 409 IN_USE, 422 REUSED, and Idempotent-Replayed on the answers
 *   that are stored, 2xx and STORED_REFUSALS (IdempotencyInterceptor);
 * - every POST, PUT or PATCH: 413 and 415 (http-hooks, or the signature pipe after the signature);
 * - request body schemas: no unknown fields (the validation pipe's forbidNonWhitelisted);
 * - every response: X-Request-Id; every operation: 500 and 431.
 */
export function buildOpenApiDocument(app: INestApplication, options: OpenApiOptions): OpenAPIObject {
  const builder = new DocumentBuilder()
    .setTitle('Tax Document Gateway')
    .setDescription(API_DESCRIPTION)
    .setVersion('1')
    .setOpenAPIVersion('3.0.3')
    .addServer('/', 'The gateway that serves this document')
    .addSecurity(API_KEY_SCHEME, {
      type: 'apiKey',
      in: 'header',
      name: 'X-API-Key',
      description: '`sk_tax_…`, issued by an administrator and bound to one source',
    })
    .addSecurity(ADMIN_TOKEN_SCHEME, {
      type: 'http',
      scheme: 'bearer',
      description: "An administrator's personal token (`adm_tax_…`), or the break-glass ADMIN_TOKEN (opaque strings, not JWTs)",
    })
    .addSecurity(ADMIN_SESSION_SCHEME, {
      type: 'apiKey',
      in: 'cookie',
      name: SESSION_COOKIE,
      description: "The console's session after single sign-on; a write must also send `X-CSRF-Token` (from GET /admin/me) or come from the console's origin",
    });
  for (const tag of API_TAGS) builder.addTag(tag.name, tag.description);
  const document = SwaggerModule.createDocument(app, builder.build(), { extraModels: [ProblemDto] });
  completeDocument(document, options);
  return document;
}

export function setupOpenApi(app: INestApplication, options: OpenApiOptions): void {
  SwaggerModule.setup('docs', app, buildOpenApiDocument(app, options), { jsonDocumentUrl: 'docs/openapi.json', yamlDocumentUrl: 'docs/openapi.yaml' });
}

function completeDocument(document: OpenAPIObject, options: OpenApiOptions): void {
  // package.json's "UNLICENSED": proprietary, all rights reserved; the URL defines that value.
  document.info.license = {
    name: 'UNLICENSED (proprietary, all rights reserved)',
    url: 'https://docs.npmjs.com/cli/v11/configuring-npm/package-json#license',
  };
  const components = (document.components ??= {});
  components.headers = {
    'X-Request-Id': {
      description:
        "The request's id: the caller's own X-Request-Id when it matches `` ^[A-Za-z0-9._:-]{1,128}$ ``, otherwise a generated UUID. Also in error bodies and log lines.",
      required: true,
      schema: { type: 'string', example: '3f0c8a52-0b4e-4a53-9d7e-2f1c9b7f0e11' },
    },
    'Idempotent-Replayed': {
      description: `\`true\` when this is the stored answer of an earlier request with the same idempotency key and body (a success, or one of ${STORED_REFUSALS_TEXT}); absent otherwise.`,
      schema: { type: 'string', enum: ['true'] },
    },
  };
  components.responses = {
    RequestHeaderFieldsTooLarge: {
      description: "The request's header section is larger than the HTTP server accepts (16 KiB); refused before any route runs.",
    },
  };
  const idempotencyKey: ParameterObject = {
    name: 'X-Idempotency-Key',
    in: 'header',
    required: true,
    description:
      'One per operation; keys are scoped per source. Sending the same key and body again returns the original answer with `Idempotent-Replayed: true`; the same key with another body is a 422 IDEMPOTENCY_KEY_REUSED.',
    schema: { type: 'string', pattern: IDEMPOTENCY_KEY_PATTERN.source, minLength: IDEMPOTENCY_KEY_LENGTH.min, maxLength: IDEMPOTENCY_KEY_LENGTH.max },
    example: 'acme-inv-2026-0001',
  };
  const bodySchemas = new Set<string>();

  for (const [path, item] of Object.entries<PathItemObject>(document.paths)) {
    for (const method of METHODS) {
      const operation = item[method];
      if (!operation) continue;
      const external = path.startsWith(EXTERNAL_API_PREFIX);
      const idempotent = external && method === 'post';
      const codes: ErrorCode[] = Object.values(operation.responses).flatMap((r) => problemCodesOf(r as ResponseObject));
      if (external) {
        operation.security = [{ [API_KEY_SCHEME]: [] }];
        codes.push('UNAUTHORIZED', 'RATE_LIMITED', 'SERVICE_UNAVAILABLE');
      }
      if (idempotent) {
        operation.parameters = [idempotencyKey, ...(operation.parameters ?? [])];
        codes.push('VALIDATION_ERROR', 'IDEMPOTENCY_KEY_REUSED', 'IDEMPOTENCY_KEY_IN_USE');
      }
      if (METHODS_WITH_BODY.has(method)) {
        codes.push('PAYLOAD_TOO_LARGE', 'UNSUPPORTED_MEDIA_TYPE');
      }
      codes.push('INTERNAL_ERROR');
      // Public operations say so explicitly, rather than leaving it to be guessed.
      operation.security ??= [];

      const context: ProblemContext = { path, validated: validatedFirst(operation, path, idempotent, options) };
      const groups = byStatus(codes);
      for (const [status, group] of groups) operation.responses[status] = problemResponse(group, context);
      operation.responses['431'] = ref('#/components/responses/RequestHeaderFieldsTooLarge');
      operation.responses = sortedByStatus(operation.responses);

      for (const [status, response] of Object.entries(operation.responses) as [string, ResponseObject | ReferenceObject][]) {
        if ('$ref' in response) continue;
        const headers = (response.headers ??= {});
        headers['X-Request-Id'] = ref('#/components/headers/X-Request-Id');
        // Stored answers: 2xx and the business refusals; a 409 that is only IDEMPOTENCY_KEY_IN_USE never is.
        const stored = status.startsWith('2') || (groups.get(Number(status)) ?? []).some((code) => STORED_REFUSALS.has(code));
        if (idempotent && stored) {
          headers['Idempotent-Replayed'] = ref('#/components/headers/Idempotent-Replayed');
        }
      }
      collectSchemaRefs(operation.requestBody, bodySchemas);
    }
  }
  closeBodySchemas(document, bodySchemas);
}

/** The input a 422 most often names, in the order the server checks them. */
function validatedFirst(operation: OperationObject, path: string, idempotent: boolean, options: OpenApiOptions): ProblemContext['validated'] {
  if (idempotent) return 'idempotency-key';
  if (operation.requestBody) return options.rawBodyRoutes.includes(path) ? 'webhook-body' : 'body';
  return path.includes('{') ? 'path' : 'query';
}

function sortedByStatus<T>(responses: Record<string, T>): Record<string, T> {
  return Object.fromEntries(Object.entries(responses).sort(([a], [b]) => a.localeCompare(b)));
}

function collectSchemaRefs(value: unknown, found: Set<string>): void {
  if (typeof value !== 'object' || value === null) return;
  for (const [key, child] of Object.entries(value)) {
    if (key === '$ref' && typeof child === 'string' && child.startsWith('#/components/schemas/')) found.add(child.slice('#/components/schemas/'.length));
    else collectSchemaRefs(child, found);
  }
}

/**
 * Request bodies refuse unknown fields (the validation pipe's forbidNonWhitelisted), nested objects
 * included, so every schema a body reaches says so unless it states its own rule (a map, a webhook).
 */
function closeBodySchemas(document: OpenAPIObject, names: Set<string>): void {
  const schemas = document.components?.schemas ?? {};
  const pending = [...names];
  while (pending.length) {
    const name = pending.pop()!;
    const schema = schemas[name] as SchemaObject | undefined;
    if (!schema) continue;
    schema.additionalProperties ??= false;
    const nested = new Set<string>();
    collectSchemaRefs(schema.properties, nested);
    for (const child of nested) {
      if (names.has(child)) continue;
      names.add(child);
      pending.push(child);
    }
  }
}
