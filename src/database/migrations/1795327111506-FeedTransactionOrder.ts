import { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * Each feed event records the id of the transaction that wrote it; the feed is read in
 * (transaction id, id) order and only up to the oldest transaction still running, which replaces the
 * per-source lock that made events of one source commit in id order. Existing events all get this
 * migration's transaction id, so among themselves they keep their id order.
 */
export class FeedTransactionOrder1795327111506 implements MigrationInterface {
  name = 'FeedTransactionOrder1795327111506';

  public async up(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(`ALTER TABLE "document_events" ADD "xid" xid8 NOT NULL DEFAULT pg_current_xact_id()`);
    await queryRunner.query(`CREATE INDEX "idx_document_events_source_xid_id" ON "document_events" ("source", "xid", "id")`);
    await queryRunner.query(`DROP INDEX "public"."idx_document_events_source_id"`);
  }

  public async down(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(`CREATE INDEX "idx_document_events_source_id" ON "document_events" ("source", "id")`);
    await queryRunner.query(`DROP INDEX "public"."idx_document_events_source_xid_id"`);
    await queryRunner.query(`ALTER TABLE "document_events" DROP COLUMN "xid"`);
  }
}
