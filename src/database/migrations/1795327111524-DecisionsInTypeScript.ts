import { MigrationInterface, QueryRunner } from 'typeorm';
import { IdempotencyClaimFunction1795327111513 } from './1795327111513-IdempotencyClaimFunction.js';
import { IdempotencyClaimOrFind1795327111519 } from './1795327111519-IdempotencyClaimOrFind.js';
import { IdempotencyBegin1795327111520 } from './1795327111520-IdempotencyBegin.js';

/**
 * The idempotency key's claim is taken by the application's own statements now (IdempotencyRepository),
 * and every decision is made in TypeScript: the functions of the releases before go. Instances of the
 * release before call them, so this runs once none of them serves (docs/operations.md, "Upgrading").
 * `down` brings the functions back as their migrations made them, for a rollback to the release before.
 */
export class DecisionsInTypeScript1795327111524 implements MigrationInterface {
  name = 'DecisionsInTypeScript1795327111524';

  public async up(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query('DROP FUNCTION IF EXISTS idempotency_begin(varchar, varchar)');
    await queryRunner.query('DROP FUNCTION IF EXISTS idempotency_claim_or_find(varchar, varchar, char, integer, smallint, text, varchar, text)');
    await queryRunner.query('DROP TYPE IF EXISTS idempotency_claim_outcome');
    await queryRunner.query('DROP FUNCTION IF EXISTS idempotency_claim(varchar, varchar, char, integer, smallint, text, varchar, text)');
    await queryRunner.query('DROP FUNCTION IF EXISTS idempotency_lock_key(varchar, varchar)');
  }

  /** The functions as the migrations that made them made them, in their order. */
  public async down(queryRunner: QueryRunner): Promise<void> {
    await new IdempotencyClaimFunction1795327111513().up(queryRunner);
    await new IdempotencyClaimOrFind1795327111519().up(queryRunner);
    await new IdempotencyBegin1795327111520().up(queryRunner);
  }
}
