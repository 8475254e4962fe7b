import { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * The idempotency key leads the primary key. The API key look-up joins the stored answer on the key's
 * source, which the statement only learns from api_keys; a generic plan made while the table was nearly
 * empty kept only `idempotency_key = $2` as its index condition, and with the source first that scanned the
 * whole index on every POST (70 buffers a call at 8,000 records). With the key first, the same plan reads
 * one leaf page whatever the size.
 */
export class IdempotencyKeyFirst1795327111510 implements MigrationInterface {
  name = 'IdempotencyKeyFirst1795327111510';

  public async up(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(
      `ALTER TABLE "idempotency_records" DROP CONSTRAINT "PK_9607d5016dd84bc4ab08113b936",
         ADD CONSTRAINT "PK_9607d5016dd84bc4ab08113b936" PRIMARY KEY ("idempotency_key", "source")`,
    );
  }

  public async down(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(
      `ALTER TABLE "idempotency_records" DROP CONSTRAINT "PK_9607d5016dd84bc4ab08113b936",
         ADD CONSTRAINT "PK_9607d5016dd84bc4ab08113b936" PRIMARY KEY ("source", "idempotency_key")`,
    );
  }
}
