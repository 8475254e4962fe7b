import { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * What the admin console reads: a document's events, the deliveries of those events (which the cascade
 * from a purged event also needs), and the charts' recent push attempts and bank events. The time columns
 * only ever grow with the rows, so a BRIN index (a few pages, next to nothing per insert) finds a recent
 * range as well as a b-tree would.
 */
export class AdminViewIndexes1795327111517 implements MigrationInterface {
  name = 'AdminViewIndexes1795327111517';

  public async up(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(`CREATE INDEX "idx_document_events_document" ON "document_events" ("document_id")`);
    await queryRunner.query(`CREATE INDEX "idx_outbound_deliveries_event" ON "outbound_deliveries" ("event_id")`);
    await queryRunner.query(`CREATE INDEX "idx_outbound_delivery_attempts_attempted_at" ON "outbound_delivery_attempts" USING brin ("attempted_at")`);
    await queryRunner.query(`CREATE INDEX "idx_webhook_events_received_at" ON "webhook_events" USING brin ("received_at")`);
  }

  public async down(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(`DROP INDEX "public"."idx_webhook_events_received_at"`);
    await queryRunner.query(`DROP INDEX "public"."idx_outbound_delivery_attempts_attempted_at"`);
    await queryRunner.query(`DROP INDEX "public"."idx_outbound_deliveries_event"`);
    await queryRunner.query(`DROP INDEX "public"."idx_document_events_document"`);
  }
}
