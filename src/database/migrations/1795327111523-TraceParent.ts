import { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * The W3C `traceparent` of the request that created a document and of the request that produced each feed
 * event, when tracing is on (src/telemetry/trace-context.ts): a bank event's trace links to its document's,
 * a push delivery's to its event's. Rows written before this, or without tracing, have none.
 */
export class TraceParent1795327111523 implements MigrationInterface {
  name = 'TraceParent1795327111523';

  public async up(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(`ALTER TABLE "documents" ADD "trace_parent" character varying(55)`);
    await queryRunner.query(`ALTER TABLE "document_events" ADD "trace_parent" character varying(55)`);
  }

  public async down(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(`ALTER TABLE "document_events" DROP COLUMN "trace_parent"`);
    await queryRunner.query(`ALTER TABLE "documents" DROP COLUMN "trace_parent"`);
  }
}
