import { Ajv } from 'ajv';
import fc from 'fast-check';

/** The parts of an OpenAPI 3.0 schema object a request generator reads. */
export interface SchemaNode {
  $ref?: string;
  type?: 'object' | 'string' | 'integer' | 'number' | 'boolean' | 'array';
  enum?: unknown[];
  pattern?: string;
  minLength?: number;
  maxLength?: number;
  format?: string;
  minimum?: number;
  maximum?: number;
  properties?: Record<string, SchemaNode>;
  required?: string[];
  additionalProperties?: boolean | SchemaNode;
  maxProperties?: number;
  description?: string;
  items?: SchemaNode;
  allOf?: SchemaNode[];
}

interface ProblemExample {
  value: { status: number; title: string; instance: string; code: string; detail: string; errors?: { field: string; message: string }[] };
}

export interface OpenApiDocument {
  paths: Record<
    string,
    Record<
      string,
      {
        parameters?: { name: string; in: string; schema: SchemaNode }[];
        requestBody?: { content: Record<string, { schema: SchemaNode }> };
        responses: Record<string, { content?: Record<string, { schema?: SchemaNode; examples?: Record<string, ProblemExample> }> }>;
      }
    >
  >;
  components: { schemas: Record<string, SchemaNode> };
}

/**
 * Values that satisfy `schema`, built from the schema alone (the way schema-driven fuzzers such as
 * schemathesis build requests): enums, patterns, lengths, formats, ranges, required and optional
 * properties, maps. Unknown properties are never added.
 */
export function schemaArbitrary(document: OpenApiDocument, schema: SchemaNode): fc.Arbitrary<unknown> {
  if (schema.$ref) return schemaArbitrary(document, document.components.schemas[schema.$ref.replace('#/components/schemas/', '')]);
  if (schema.allOf?.length === 1) return schemaArbitrary(document, schema.allOf[0]);
  if (schema.enum) return fc.constantFrom(...schema.enum);
  switch (schema.type) {
    case 'object': {
      if (!schema.properties && typeof schema.additionalProperties === 'object') {
        return fc.dictionary(fc.string(), schemaArbitrary(document, schema.additionalProperties), { maxKeys: schema.maxProperties ?? 10 });
      }
      const properties = Object.fromEntries(Object.entries(schema.properties ?? {}).map(([name, child]) => [name, schemaArbitrary(document, child)]));
      return fc.record(properties, { requiredKeys: schema.required ?? [] });
    }
    case 'string':
      return stringArbitrary(schema);
    case 'integer':
      return fc.integer({ min: schema.minimum ?? -(2 ** 31), max: schema.maximum ?? 2 ** 31 });
    case 'number':
      return fc.double({ min: schema.minimum, max: schema.maximum, noNaN: true });
    case 'boolean':
      return fc.boolean();
    case 'array':
      return fc.array(schemaArbitrary(document, schema.items ?? {}), { maxLength: 5 });
    default:
      return fc.jsonValue();
  }
}

function stringArbitrary(schema: SchemaNode): fc.Arbitrary<string> {
  const min = schema.minLength ?? 0;
  const max = schema.maxLength ?? 200;
  if (schema.format === 'date' || schema.format === 'date-time') {
    const dates = fc.date({ min: new Date('1900-01-01T00:00:00Z'), max: new Date('2999-12-31T23:59:59Z'), noInvalidDate: true });
    return dates.map((date) => (schema.format === 'date' ? date.toISOString().slice(0, 10) : date.toISOString()));
  }
  const base = schema.pattern ? fc.stringMatching(new RegExp(schema.pattern)) : fc.string({ minLength: min, maxLength: max });
  return base.filter((value) => value.length >= min && value.length <= max);
}

export interface Exchange {
  method: string;
  path: string;
  status: number;
  contentType: string;
  body: unknown;
}

/**
 * A fetch that records what it got, for checking every answer against the document afterwards.
 * Bodies are read from a clone, so the caller still reads its own.
 */
export function recordingFetch(exchanges: Exchange[]): (input: Request) => Promise<Response> {
  return async (request) => {
    const response = await fetch(request);
    const text = await response.clone().text();
    exchanges.push({
      method: request.method.toLowerCase(),
      path: new URL(request.url).pathname,
      status: response.status,
      contentType: (response.headers.get('content-type') ?? '').split(';')[0],
      body: text ? JSON.parse(text) : undefined,
    });
    return response;
  };
}

/**
 * Why `exchange` does not fit the document: an undocumented status or media type, or a body its
 * schema refuses. Null when it fits.
 */
export function mismatch(document: OpenApiDocument, exchange: Exchange): string | null {
  const template = Object.keys(document.paths).find((path) => new RegExp(`^${path.replace(/\{[^}]+\}/g, '[^/]+')}$`).test(exchange.path));
  const operation = template ? document.paths[template][exchange.method] : undefined;
  if (!operation) return `${exchange.method} ${exchange.path} is not documented`;
  const response = operation.responses[String(exchange.status)];
  const schema = response?.content?.[exchange.contentType]?.schema;
  if (!schema) return `${exchange.method} ${template} answered ${exchange.status} ${exchange.contentType}, which is not documented`;
  // OpenAPI 3.0 schemas: `nullable` is understood, `example` ignored; refs point into the document's components.
  const validate = new Ajv({ strict: false, validateFormats: false, allErrors: true }).compile({ ...schema, components: document.components });
  return validate(exchange.body) ? null : `${exchange.method} ${template} ${exchange.status}: ${JSON.stringify(validate.errors)}`;
}
