import { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * Due deliveries are claimed per endpoint, oldest first, up to the endpoint's free slots. With one index
 * over all pending deliveries by time, a claim made while an endpoint had every slot taken read that
 * endpoint's whole backlog to find nothing (27 ms a claim with a few thousand waiting, under load).
 */
export class OutboundDuePerEndpoint1795327111509 implements MigrationInterface {
  name = 'OutboundDuePerEndpoint1795327111509';

  public async up(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(
      `CREATE INDEX "idx_outbound_deliveries_endpoint_due" ON "outbound_deliveries" ("endpoint_id", "next_attempt_at") WHERE status = 'pending'`,
    );
    await queryRunner.query(`DROP INDEX "public"."idx_outbound_deliveries_due"`);
  }

  public async down(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(`CREATE INDEX "idx_outbound_deliveries_due" ON "outbound_deliveries" ("next_attempt_at") WHERE status = 'pending'`);
    await queryRunner.query(`DROP INDEX "public"."idx_outbound_deliveries_endpoint_due"`);
  }
}
