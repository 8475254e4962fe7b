import { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * The idempotency module's claim, as database functions: the one definition of what claiming a key
 * means, called by IdempotencyRepository and by a statement that does its whole request at once (a
 * create: claim, document and feed event in one statement). Whoever calls them never writes the
 * idempotency_records table itself.
 *
 * - idempotency_lock_key: the 64-bit advisory lock a claim holds until its transaction ends, so a
 *   duplicate that arrives meanwhile learns at once that the key is in use, instead of waiting.
 * - idempotency_claim: takes that lock without waiting and writes the key's record, or takes over an
 *   expired one; returns the stored answer (with the transaction's time where `p_time_marker` stood), or
 *   NULL when it did not claim the key (in use, or a live record exists). ON CONFLICT sees records
 *   committed after the calling statement began, so a request that finished just before can never run twice.
 */
export class IdempotencyClaimFunction1795327111513 implements MigrationInterface {
  name = 'IdempotencyClaimFunction1795327111513';

  public async up(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(`CREATE FUNCTION idempotency_lock_key(p_source varchar, p_key varchar) RETURNS bigint
      LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$ SELECT hashtextextended(p_source || ' ' || p_key, 7340218) $$`);
    await queryRunner.query(`CREATE FUNCTION idempotency_claim(
        p_source varchar, p_key varchar, p_fingerprint char(64), p_ttl_seconds integer,
        p_status smallint, p_body text, p_location varchar, p_time_marker text) RETURNS text
      LANGUAGE plpgsql VOLATILE AS $$
      DECLARE
        stored text;
      BEGIN
        IF NOT pg_try_advisory_xact_lock(idempotency_lock_key(p_source, p_key)) THEN
          RETURN NULL;
        END IF;
        INSERT INTO idempotency_records AS r (source, idempotency_key, fingerprint, response_status, response_body, response_location, expires_at)
        VALUES (p_source, p_key, p_fingerprint, p_status,
                CASE WHEN p_time_marker IS NULL THEN p_body
                     ELSE replace(p_body, p_time_marker, '"' || to_char(now() AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"') || '"') END,
                p_location, now() + make_interval(secs => p_ttl_seconds))
        ON CONFLICT (idempotency_key, source) DO UPDATE
          SET fingerprint = EXCLUDED.fingerprint, response_status = EXCLUDED.response_status, response_body = EXCLUDED.response_body,
              response_location = EXCLUDED.response_location, created_at = now(), expires_at = EXCLUDED.expires_at
          WHERE r.expires_at <= now()
        RETURNING response_body INTO stored;
        RETURN stored;
      END $$`);
  }

  public async down(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query('DROP FUNCTION idempotency_claim(varchar, varchar, char, integer, smallint, text, varchar, text)');
    await queryRunner.query('DROP FUNCTION idempotency_lock_key(varchar, varchar)');
  }
}
