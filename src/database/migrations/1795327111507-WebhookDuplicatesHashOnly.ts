import { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * A duplicate delivery keeps only its eventId, the SHA-256 of its body and its times: a captured
 * delivery replayed many times must not store its body again each time. The first delivery of an
 * eventId keeps its raw bytes. Unmatched events get a partial index, looked up at every creation.
 */
export class WebhookDuplicatesHashOnly1795327111507 implements MigrationInterface {
  name = 'WebhookDuplicatesHashOnly1795327111507';

  public async up(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(`ALTER TABLE "webhook_events" ADD "body_sha256" bytea`);
    await queryRunner.query(`UPDATE "webhook_events" SET "body_sha256" = sha256("raw_body")`);
    await queryRunner.query(`ALTER TABLE "webhook_events" ALTER COLUMN "body_sha256" SET NOT NULL`);
    await queryRunner.query(
      `ALTER TABLE "webhook_events" ALTER COLUMN "raw_body" DROP NOT NULL, ALTER COLUMN "event_type" DROP NOT NULL,
         ALTER COLUMN "status" DROP NOT NULL, ALTER COLUMN "provider_reference" DROP NOT NULL`,
    );
    await queryRunner.query(
      `UPDATE "webhook_events" SET "raw_body" = NULL, "event_type" = NULL, "status" = NULL, "provider_reference" = NULL WHERE "outcome" = 'duplicate'`,
    );
    await queryRunner.query(
      `ALTER TABLE "webhook_events" ADD CONSTRAINT "ck_webhook_events_duplicate_hash_only" CHECK (
         CASE WHEN "outcome" = 'duplicate'
              THEN "raw_body" IS NULL AND "event_type" IS NULL AND "status" IS NULL AND "provider_reference" IS NULL
              ELSE "raw_body" IS NOT NULL AND "event_type" IS NOT NULL AND "status" IS NOT NULL AND "provider_reference" IS NOT NULL END)`,
    );
    await queryRunner.query(`DROP INDEX "public"."idx_webhook_events_provider_reference"`);
    await queryRunner.query(`CREATE INDEX "idx_webhook_events_unmatched" ON "webhook_events" ("provider_reference", "id") WHERE outcome = 'unmatched'`);
  }

  public async down(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(`DROP INDEX "public"."idx_webhook_events_unmatched"`);
    await queryRunner.query(`CREATE INDEX "idx_webhook_events_provider_reference" ON "webhook_events" ("provider_reference")`);
    await queryRunner.query(`ALTER TABLE "webhook_events" DROP CONSTRAINT "ck_webhook_events_duplicate_hash_only"`);
    // A duplicate's body is gone; what it had in common with the first delivery is copied back.
    await queryRunner.query(
      `UPDATE "webhook_events" d SET "raw_body" = o."raw_body", "event_type" = o."event_type", "status" = o."status",
              "provider_reference" = o."provider_reference"
         FROM "webhook_events" o WHERE d."outcome" = 'duplicate' AND o."event_id" = d."event_id" AND o."outcome" <> 'duplicate'`,
    );
    await queryRunner.query(
      `ALTER TABLE "webhook_events" ALTER COLUMN "raw_body" SET NOT NULL, ALTER COLUMN "event_type" SET NOT NULL,
         ALTER COLUMN "status" SET NOT NULL, ALTER COLUMN "provider_reference" SET NOT NULL`,
    );
    await queryRunner.query(`ALTER TABLE "webhook_events" DROP COLUMN "body_sha256"`);
  }
}
