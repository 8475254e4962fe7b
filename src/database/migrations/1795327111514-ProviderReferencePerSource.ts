import { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * A providerReference is unique within a source only (README, "Documents, lifecycle and the event feed"). Unique across all sources, one
 * source could take another's reference first: its document got the other's payment status, the owner's
 * own document was refused with a 409 that also told it the reference was in use. The bank event's
 * look-up by reference across sources keeps an index of its own.
 */
export class ProviderReferencePerSource1795327111514 implements MigrationInterface {
  name = 'ProviderReferencePerSource1795327111514';

  public async up(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(`DROP INDEX "public"."uq_documents_provider_reference"`);
    await queryRunner.query(`ALTER TABLE "documents" ADD CONSTRAINT "uq_documents_source_provider_reference" UNIQUE ("source", "provider_reference")`);
    await queryRunner.query(`CREATE INDEX "idx_documents_provider_reference" ON "documents" ("provider_reference")`);
  }

  public async down(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(`DROP INDEX "public"."idx_documents_provider_reference"`);
    await queryRunner.query(`ALTER TABLE "documents" DROP CONSTRAINT "uq_documents_source_provider_reference"`);
    // Fails, as it should, once two sources share a reference.
    await queryRunner.query(`CREATE UNIQUE INDEX "uq_documents_provider_reference" ON "documents" ("provider_reference")`);
  }
}
