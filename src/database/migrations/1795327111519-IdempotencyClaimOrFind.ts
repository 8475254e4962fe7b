import { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * idempotency_claim_or_find: the claim a request makes when it arrives, answering with what the key says
 * when it does not claim it, so that the caller needs no second look-up:
 * - a live stored answer (a replay, or a key reused for another request): read first, without taking the
 *   key's lock or locking the record's row, so a replay writes nothing and its transaction gets no id (and
 *   has no commit to flush);
 * - in use (a transaction holds the key's lock): `claimed` false and no stored answer;
 * - otherwise idempotency_claim() (the one definition of writing a claim), and if a request with the key
 *   finished between the look-up and the claim, its answer, read again.
 * idempotency_claim stays as it is, for the release before this one during a rolling upgrade.
 */
export class IdempotencyClaimOrFind1795327111519 implements MigrationInterface {
  name = 'IdempotencyClaimOrFind1795327111519';

  public async up(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(`CREATE TYPE idempotency_claim_outcome AS (
        claimed boolean, answer text, stored_fingerprint char(64), stored_status smallint, stored_location varchar)`);
    await queryRunner.query(`CREATE FUNCTION idempotency_claim_or_find(
        p_source varchar, p_key varchar, p_fingerprint char(64), p_ttl_seconds integer,
        p_status smallint, p_body text, p_location varchar, p_time_marker text) RETURNS idempotency_claim_outcome
      LANGUAGE plpgsql VOLATILE AS $$
      DECLARE
        outcome idempotency_claim_outcome;
      BEGIN
        SELECT false, r.response_body, r.fingerprint, r.response_status, r.response_location INTO outcome
          FROM idempotency_records r WHERE r.idempotency_key = p_key AND r.source = p_source AND r.expires_at > now();
        IF FOUND THEN
          RETURN outcome;
        END IF;
        IF NOT pg_try_advisory_xact_lock(idempotency_lock_key(p_source, p_key)) THEN
          RETURN ROW(false, NULL, NULL, NULL, NULL)::idempotency_claim_outcome;
        END IF;
        outcome.answer := idempotency_claim(p_source, p_key, p_fingerprint, p_ttl_seconds, p_status, p_body, p_location, p_time_marker);
        IF outcome.answer IS NOT NULL THEN
          RETURN ROW(true, outcome.answer, NULL, NULL, NULL)::idempotency_claim_outcome;
        END IF;
        SELECT false, r.response_body, r.fingerprint, r.response_status, r.response_location INTO outcome
          FROM idempotency_records r WHERE r.idempotency_key = p_key AND r.source = p_source AND r.expires_at > now();
        IF FOUND THEN
          RETURN outcome;
        END IF;
        RETURN ROW(false, NULL, NULL, NULL, NULL)::idempotency_claim_outcome;
      END $$`);
  }

  public async down(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query('DROP FUNCTION idempotency_claim_or_find(varchar, varchar, char, integer, smallint, text, varchar, text)');
    await queryRunner.query('DROP TYPE idempotency_claim_outcome');
  }
}
