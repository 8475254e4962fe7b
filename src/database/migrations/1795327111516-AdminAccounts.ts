import { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * Administrators as people (README, "Administration"): accounts with a role, their personal tokens and console
 * sessions (hashes only), the OpenID Connect sign-ins under way, and an audit log that names its actor
 * and target. Endpoints may be disabled by an administrator (disabledReason "admin").
 */
export class AdminAccounts1795327111516 implements MigrationInterface {
  name = 'AdminAccounts1795327111516';

  public async up(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(`CREATE TABLE "admins" (
      "id" uuid NOT NULL DEFAULT gen_random_uuid(), "email" character varying(320) NOT NULL, "name" character varying(200),
      "role" character varying(16) NOT NULL, "disabled_at" TIMESTAMP WITH TIME ZONE, "created_at" TIMESTAMP WITH TIME ZONE NOT NULL DEFAULT now(),
      "last_seen_at" TIMESTAMP WITH TIME ZONE,
      CONSTRAINT "ck_admins_role" CHECK (role IN ('viewer', 'operator', 'admin')), CONSTRAINT "pk_admins" PRIMARY KEY ("id"))`);
    // Emails are unique whatever their case.
    await queryRunner.query(`CREATE UNIQUE INDEX "uq_admins_email" ON "admins" (lower("email"))`);
    await queryRunner.query(`CREATE INDEX "idx_admins_created" ON "admins" ("created_at", "id")`);
    await queryRunner.query(`CREATE TABLE "admin_tokens" (
      "id" uuid NOT NULL DEFAULT gen_random_uuid(), "admin_id" uuid NOT NULL, "name" character varying(200), "token_hash" character(64) NOT NULL,
      "prefix" character varying(16) NOT NULL, "last4" character varying(4) NOT NULL, "created_at" TIMESTAMP WITH TIME ZONE NOT NULL DEFAULT now(),
      "expires_at" TIMESTAMP WITH TIME ZONE, "revoked_at" TIMESTAMP WITH TIME ZONE, "last_used_at" TIMESTAMP WITH TIME ZONE,
      CONSTRAINT "pk_admin_tokens" PRIMARY KEY ("id"),
      CONSTRAINT "fk_admin_tokens_admin" FOREIGN KEY ("admin_id") REFERENCES "admins"("id") ON DELETE CASCADE)`);
    await queryRunner.query(`CREATE UNIQUE INDEX "uq_admin_tokens_token_hash" ON "admin_tokens" ("token_hash")`);
    await queryRunner.query(`CREATE INDEX "idx_admin_tokens_admin" ON "admin_tokens" ("admin_id", "created_at")`);
    await queryRunner.query(`CREATE TABLE "admin_sessions" (
      "id" uuid NOT NULL DEFAULT gen_random_uuid(), "admin_id" uuid NOT NULL, "token_hash" character(64) NOT NULL, "csrf_token" character varying(64) NOT NULL,
      "created_at" TIMESTAMP WITH TIME ZONE NOT NULL DEFAULT now(), "last_seen_at" TIMESTAMP WITH TIME ZONE NOT NULL DEFAULT now(),
      "expires_at" TIMESTAMP WITH TIME ZONE NOT NULL, "ended_at" TIMESTAMP WITH TIME ZONE,
      CONSTRAINT "pk_admin_sessions" PRIMARY KEY ("id"),
      CONSTRAINT "fk_admin_sessions_admin" FOREIGN KEY ("admin_id") REFERENCES "admins"("id") ON DELETE CASCADE)`);
    await queryRunner.query(`CREATE UNIQUE INDEX "uq_admin_sessions_token_hash" ON "admin_sessions" ("token_hash")`);
    await queryRunner.query(`CREATE INDEX "idx_admin_sessions_expires" ON "admin_sessions" ("expires_at")`);
    await queryRunner.query(`CREATE TABLE "admin_oidc_logins" (
      "state" character varying(64) NOT NULL, "nonce" character varying(64) NOT NULL, "code_verifier" character varying(128) NOT NULL,
      "expires_at" TIMESTAMP WITH TIME ZONE NOT NULL, CONSTRAINT "pk_admin_oidc_logins" PRIMARY KEY ("state"))`);
    await queryRunner.query(`ALTER TABLE "admin_audit_log"
      ADD "actor_type" character varying(16) NOT NULL DEFAULT 'bootstrap', ADD "actor_admin_id" uuid, ADD "actor_email" character varying(320),
      ADD "target_type" character varying(32), ADD "target_id" character varying(255)`);
    await queryRunner.query(`UPDATE "admin_audit_log" SET "target_type" = 'api_key', "target_id" = "key_id"::text WHERE "key_id" IS NOT NULL`);
    await queryRunner.query(`UPDATE "admin_audit_log" SET "actor_type" = 'cli' WHERE "remote_address" = 'cli'`);
    await queryRunner.query(`CREATE INDEX "idx_admin_audit_log_actor" ON "admin_audit_log" ("actor_admin_id", "id")`);
    await queryRunner.query(`CREATE INDEX "idx_admin_audit_log_action" ON "admin_audit_log" ("action", "id")`);
    await queryRunner.query(`ALTER TABLE "webhook_endpoints" DROP CONSTRAINT "ck_webhook_endpoints_disabled_reason"`);
    await queryRunner.query(
      `ALTER TABLE "webhook_endpoints" ADD CONSTRAINT "ck_webhook_endpoints_disabled_reason" CHECK (disabled_reason IN ('gone', 'failing', 'client', 'admin'))`,
    );
  }

  public async down(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(`UPDATE "webhook_endpoints" SET "disabled_reason" = 'client' WHERE "disabled_reason" = 'admin'`);
    await queryRunner.query(`ALTER TABLE "webhook_endpoints" DROP CONSTRAINT "ck_webhook_endpoints_disabled_reason"`);
    await queryRunner.query(
      `ALTER TABLE "webhook_endpoints" ADD CONSTRAINT "ck_webhook_endpoints_disabled_reason" CHECK (disabled_reason IN ('gone', 'failing', 'client'))`,
    );
    await queryRunner.query(`DROP INDEX "public"."idx_admin_audit_log_action"`);
    await queryRunner.query(`DROP INDEX "public"."idx_admin_audit_log_actor"`);
    await queryRunner.query(
      `ALTER TABLE "admin_audit_log" DROP COLUMN "target_id", DROP COLUMN "target_type", DROP COLUMN "actor_email", DROP COLUMN "actor_admin_id", DROP COLUMN "actor_type"`,
    );
    await queryRunner.query(`DROP TABLE "admin_oidc_logins"`);
    await queryRunner.query(`DROP TABLE "admin_sessions"`);
    await queryRunner.query(`DROP TABLE "admin_tokens"`);
    await queryRunner.query(`DROP TABLE "admins"`);
  }
}
