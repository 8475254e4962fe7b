import { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * The duplicates of a bank event by its eventId, so that retention deletes them with the event they
 * repeat: a duplicate keeps only a hash and its times, and shows the event's fields from the event's row.
 * Partial: duplicates are few, and the index costs nothing for any other row.
 */
export class BankEventDuplicatesIndex1795327111518 implements MigrationInterface {
  name = 'BankEventDuplicatesIndex1795327111518';

  public async up(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(`CREATE INDEX "idx_webhook_events_duplicates" ON "webhook_events" ("event_id") WHERE outcome = 'duplicate'`);
  }

  public async down(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(`DROP INDEX "public"."idx_webhook_events_duplicates"`);
  }
}
