/** A finished request's answer, stored with the fingerprint of the request that produced it. */
export interface StoredAnswer {
  fingerprint: string;
  status: number;
  body: string;
  location: string | null;
}

/** The columns of a StoredAnswer, from idempotency_records aliased as `table`. */
export const storedAnswerColumns = (table: string) =>
  `${table}.fingerprint, ${table}.response_status AS status, ${table}.response_body AS body, ${table}.response_location AS location`;

declare module 'fastify' {
  interface FastifyRequest {
    /**
     * The live stored answer of this POST's idempotency key, read with the API key in one statement
     * (null: none); undefined when it was not looked up (no or malformed X-Idempotency-Key).
     */
    storedAnswer?: StoredAnswer | null;
  }
}
