import { MigrationInterface, QueryRunner } from 'typeorm';

/** WebhookEndpointsRepository's per-source endpoints lock (pg_advisory_xact_lock(namespace, hashtext(source))). */
const ENDPOINTS_LOCK_NAMESPACE = 7_340_216;

const ENQUEUE = (afterInsert: string) => `CREATE OR REPLACE FUNCTION "enqueue_outbound_delivery"() RETURNS trigger LANGUAGE plpgsql AS $$
      BEGIN
        PERFORM pg_advisory_xact_lock_shared(${ENDPOINTS_LOCK_NAMESPACE}, hashtext(NEW.source))
          WHERE EXISTS (SELECT 1 FROM webhook_endpoints w WHERE w.source = NEW.source AND w.enabled AND NEW.type = ANY (w.event_types));
        IF NOT FOUND THEN
          RETURN NULL;
        END IF;
        INSERT INTO outbound_deliveries (endpoint_id, event_id, source, event_type)
        SELECT w.id, NEW.id, NEW.source, NEW.type
          FROM webhook_endpoints w
         WHERE w.source = NEW.source AND w.enabled AND NEW.type = ANY (w.event_types);
        ${afterInsert}
        RETURN NULL;
      END $$`;

/**
 * The feed trigger no longer sets the transaction-local flag `outbound.enqueued`: nothing reads it. The
 * delivery worker is woken in the process by every commit that appends feed events (FeedSignal), and
 * tells the other instances itself.
 */
export class OutboundEnqueueWithoutFlag1795327111515 implements MigrationInterface {
  name = 'OutboundEnqueueWithoutFlag1795327111515';

  public async up(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(ENQUEUE(''));
  }

  public async down(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(
      ENQUEUE(`IF FOUND THEN
          PERFORM set_config('outbound.enqueued', 'on', true);
        END IF;`),
    );
  }
}
