import { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * A providerReference stays unique within a source, with the reference as the index's first column: the one index
 * serves the bank event's look-up by reference across sources as well, so a document is written into one index fewer.
 */
export class ProviderReferenceFirst1795327111525 implements MigrationInterface {
  name = 'ProviderReferenceFirst1795327111525';

  public async up(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(`ALTER TABLE "documents" ADD CONSTRAINT "uq_documents_provider_reference_source" UNIQUE ("provider_reference", "source")`);
    await queryRunner.query(`ALTER TABLE "documents" DROP CONSTRAINT "uq_documents_source_provider_reference"`);
    await queryRunner.query(`DROP INDEX "public"."idx_documents_provider_reference"`);
  }

  public async down(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(`CREATE INDEX "idx_documents_provider_reference" ON "documents" ("provider_reference")`);
    await queryRunner.query(`ALTER TABLE "documents" ADD CONSTRAINT "uq_documents_source_provider_reference" UNIQUE ("source", "provider_reference")`);
    await queryRunner.query(`ALTER TABLE "documents" DROP CONSTRAINT "uq_documents_provider_reference_source"`);
  }
}
