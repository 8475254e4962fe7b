import { MigrationInterface, QueryRunner } from 'typeorm';

const TABLES = ['archive_entries', 'archive_nodes', 'archive_checkpoints', 'archive_verifications'];

/**
 * The archive (docs/archive.md): entries, tree nodes, checkpoints and verification runs, each refusing
 * UPDATE, DELETE and TRUNCATE through one trigger function, so that a change needs a superuser or the
 * tables' owner to switch the triggers off first, which the verifier then finds. Feed events name the
 * bank event that made them, so sealing tells a document's payment at each event without the bank's records.
 */
export class Archive1795327111526 implements MigrationInterface {
  name = 'Archive1795327111526';

  public async up(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(`ALTER TABLE "document_events" ADD "bank_event_id" character varying(255)`);
    await queryRunner.query(
      `CREATE TABLE "archive_entries" ("index" bigint NOT NULL, "event_id" bigint NOT NULL, "source" character varying(63) NOT NULL, "document_id" uuid NOT NULL, "feed_xid" numeric NOT NULL, "entry" text NOT NULL, "sealed_at" TIMESTAMP WITH TIME ZONE NOT NULL, CONSTRAINT "PK_archive_entries" PRIMARY KEY ("index"))`,
    );
    await queryRunner.query(`CREATE UNIQUE INDEX "uq_archive_entries_event" ON "archive_entries" ("event_id")`);
    await queryRunner.query(`CREATE INDEX "idx_archive_entries_document" ON "archive_entries" ("document_id", "index")`);
    await queryRunner.query(
      `CREATE TABLE "archive_nodes" ("level" smallint NOT NULL, "index" bigint NOT NULL, "hash" bytea NOT NULL, CONSTRAINT "PK_archive_nodes" PRIMARY KEY ("level", "index"))`,
    );
    await queryRunner.query(
      `CREATE TABLE "archive_checkpoints" ("tree_size" bigint NOT NULL, "root_hash" bytea NOT NULL, "note" text NOT NULL, "verifier_key" character varying(300) NOT NULL, "signed_at" TIMESTAMP WITH TIME ZONE NOT NULL, CONSTRAINT "PK_archive_checkpoints" PRIMARY KEY ("tree_size"))`,
    );
    await queryRunner.query(
      `CREATE TABLE "archive_verifications" ("id" bigint GENERATED ALWAYS AS IDENTITY NOT NULL, "started_at" TIMESTAMP WITH TIME ZONE NOT NULL, "finished_at" TIMESTAMP WITH TIME ZONE NOT NULL, "tree_size" bigint NOT NULL, "finding_count" integer NOT NULL, "findings" jsonb NOT NULL, CONSTRAINT "PK_archive_verifications" PRIMARY KEY ("id"))`,
    );
    await queryRunner.query(`CREATE FUNCTION "archive_append_only"() RETURNS trigger LANGUAGE plpgsql AS $$
      BEGIN
        RAISE EXCEPTION 'The archive is append-only: % on % refused', TG_OP, TG_TABLE_NAME USING ERRCODE = 'insufficient_privilege';
      END $$`);
    for (const table of TABLES) {
      // Per statement, so an UPDATE or DELETE is refused even when it matches no row.
      await queryRunner.query(
        `CREATE TRIGGER "trg_${table}_append_only" BEFORE UPDATE OR DELETE OR TRUNCATE ON "${table}" FOR EACH STATEMENT EXECUTE FUNCTION "archive_append_only"()`,
      );
    }
  }

  public async down(queryRunner: QueryRunner): Promise<void> {
    for (const table of [...TABLES].reverse()) await queryRunner.query(`DROP TABLE "${table}"`);
    await queryRunner.query(`DROP FUNCTION "archive_append_only"()`);
    await queryRunner.query(`ALTER TABLE "document_events" DROP COLUMN "bank_event_id"`);
  }
}
