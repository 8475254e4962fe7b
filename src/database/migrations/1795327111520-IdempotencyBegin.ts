import { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * idempotency_begin: what a request finds when it arrives with its idempotency key, in the transaction
 * its work will run in; the record itself is written once the answer is known (IdempotencyRepository).
 * One row:
 * - a live stored answer (a replay, or a key reused for another request): read first, without taking the
 *   key's lock, so a replay writes nothing and its transaction gets no id;
 * - `held` false and no answer: another transaction holds the key's lock (in use);
 * - `held` true and no answer: the key is this transaction's until it ends. A request that held the key
 *   before may have finished between the first look and the lock: its answer is read again, behind the lock.
 * The functions of the releases before (idempotency_claim, idempotency_claim_or_find) stay for a rolling
 * upgrade: they take the same lock (idempotency_lock_key), so old and new instances exclude each other.
 */
export class IdempotencyBegin1795327111520 implements MigrationInterface {
  name = 'IdempotencyBegin1795327111520';

  public async up(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(`CREATE FUNCTION idempotency_begin(p_source varchar, p_key varchar)
      RETURNS TABLE (held boolean, fingerprint char(64), response_status smallint, response_body text, response_location varchar)
      LANGUAGE plpgsql VOLATILE AS $$
      BEGIN
        RETURN QUERY SELECT false, r.fingerprint, r.response_status, r.response_body, r.response_location
          FROM idempotency_records r WHERE r.idempotency_key = p_key AND r.source = p_source AND r.expires_at > now();
        IF FOUND THEN
          RETURN;
        END IF;
        IF NOT pg_try_advisory_xact_lock(idempotency_lock_key(p_source, p_key)) THEN
          RETURN QUERY SELECT false, NULL::char(64), NULL::smallint, NULL::text, NULL::varchar;
          RETURN;
        END IF;
        RETURN QUERY SELECT true, r.fingerprint, r.response_status, r.response_body, r.response_location
          FROM idempotency_records r WHERE r.idempotency_key = p_key AND r.source = p_source AND r.expires_at > now();
        IF FOUND THEN
          RETURN;
        END IF;
        RETURN QUERY SELECT true, NULL::char(64), NULL::smallint, NULL::text, NULL::varchar;
      END $$`);
  }

  public async down(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query('DROP FUNCTION idempotency_begin(varchar, varchar)');
  }
}
