import { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * What a change changed, on its audit entry: the fields, each with its value before and after (an
 * administrator's role, name or disabled state). Null for entries whose action says it all.
 */
export class AuditChanges1795327111521 implements MigrationInterface {
  name = 'AuditChanges1795327111521';

  public async up(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(`ALTER TABLE "admin_audit_log" ADD "changes" jsonb`);
  }

  public async down(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(`ALTER TABLE "admin_audit_log" DROP COLUMN "changes"`);
  }
}
