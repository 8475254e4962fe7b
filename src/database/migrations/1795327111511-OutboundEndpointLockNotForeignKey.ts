import { MigrationInterface, QueryRunner } from 'typeorm';

/** WebhookEndpointsService's per-source endpoints lock (pg_advisory_xact_lock(namespace, hashtext(source))). */
const ENDPOINTS_LOCK_NAMESPACE = 7_340_216;

const ENQUEUE = (lockSources: string) => `CREATE OR REPLACE FUNCTION "enqueue_outbound_deliveries"() RETURNS trigger LANGUAGE plpgsql AS $$
      BEGIN
        ${lockSources}
        INSERT INTO outbound_deliveries (endpoint_id, event_id, source, event_type)
        SELECT w.id, e.id, e.source, e.type
          FROM appended_events e
          JOIN webhook_endpoints w ON w.source = e.source AND w.enabled AND e.type = ANY (w.event_types);
        IF FOUND THEN
          PERFORM set_config('outbound.enqueued', 'on', true);
        END IF;
        RETURN NULL;
      END $$`;

/**
 * A delivery's endpoint is no longer a foreign key. Its check took a KEY SHARE lock on the endpoint's row
 * in every create of the endpoint's source, and while several such transactions hold that lock, each one
 * that joins makes PostgreSQL write a new MultiXact listing them all: with 32 clients creating documents
 * for one source, about 18 MultiXact members per create (298 member pages in 15 s of pgbench). At that
 * rate the 2^32 member space is used up within two days unless vacuum freezes every table of the database
 * first, so sustained writes would force aggressive vacuums of the whole database, documents included.
 *
 * What the key guaranteed, that no delivery outlives its endpoint, now comes from the per-source
 * endpoints lock: the trigger takes it shared, when the source has a matching endpoint, before it reads
 * the endpoints it inserts deliveries for (in a statement of its own, so with a snapshot taken once the
 * lock is held); deleting an endpoint takes it exclusively, so it waits for the creates that may have
 * enqueued for it to commit, then deletes their deliveries with the endpoint, and later creates see the
 * endpoint gone. A shared advisory lock is an entry in the lock table, not a write to the row.
 */
export class OutboundEndpointLockNotForeignKey1795327111511 implements MigrationInterface {
  name = 'OutboundEndpointLockNotForeignKey1795327111511';

  public async up(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(`ALTER TABLE "outbound_deliveries" DROP CONSTRAINT "fk_outbound_deliveries_endpoint"`);
    await queryRunner.query(
      ENQUEUE(`PERFORM pg_advisory_xact_lock_shared(${ENDPOINTS_LOCK_NAMESPACE}, hashtext(s.source))
          FROM (SELECT DISTINCT e.source FROM appended_events e
                 WHERE EXISTS (SELECT 1 FROM webhook_endpoints w WHERE w.source = e.source AND w.enabled AND e.type = ANY (w.event_types))) s;
        IF NOT FOUND THEN
          RETURN NULL;
        END IF;`),
    );
  }

  public async down(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(ENQUEUE(''));
    await queryRunner.query(`DELETE FROM "outbound_deliveries" d WHERE NOT EXISTS (SELECT 1 FROM "webhook_endpoints" w WHERE w.id = d.endpoint_id)`);
    await queryRunner.query(
      `ALTER TABLE "outbound_deliveries" ADD CONSTRAINT "fk_outbound_deliveries_endpoint" FOREIGN KEY ("endpoint_id") REFERENCES "webhook_endpoints"("id") ON DELETE CASCADE`,
    );
  }
}
