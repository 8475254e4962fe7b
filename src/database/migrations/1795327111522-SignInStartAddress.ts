import { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * Who started a sign-in: each address may have only so many under way (AdminSsoService), so that
 * unauthenticated requests cannot fill the table. Sign-ins started before this have none.
 */
export class SignInStartAddress1795327111522 implements MigrationInterface {
  name = 'SignInStartAddress1795327111522';

  public async up(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(`ALTER TABLE "admin_oidc_logins" ADD "remote_address" character varying(64)`);
    await queryRunner.query(`CREATE INDEX "idx_admin_oidc_logins_address" ON "admin_oidc_logins" ("remote_address")`);
  }

  public async down(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(`DROP INDEX "public"."idx_admin_oidc_logins_address"`);
    await queryRunner.query(`ALTER TABLE "admin_oidc_logins" DROP COLUMN "remote_address"`);
  }
}
