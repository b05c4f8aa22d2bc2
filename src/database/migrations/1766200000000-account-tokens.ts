import { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * Purchases from the app (docs/purchases.md): public.account_tokens remembers the UUID the service
 * derived for each application and username, which the app passes to the store (Apple's
 * appAccountToken, Google's obfuscatedAccountId) and the store sends back in notifications, so they
 * map to the username. Not a read-model table: a rebuild must not bring back an erased customer's
 * mapping. username_hash is the erasure hash (erasure-hash.ts), by which an erasure deletes the row.
 * Frozen SQL.
 */
export class AccountTokens1766200000000 implements MigrationInterface {
  name = 'AccountTokens1766200000000';

  async up(q: QueryRunner): Promise<void> {
    await q.query(`
      CREATE TABLE public.account_tokens (
        app_id               text        NOT NULL,
        token                uuid        NOT NULL,
        application_username text        NOT NULL,
        username_hash        text        NOT NULL CHECK (username_hash ~ '^[0-9a-f]{64}$'),
        created_at           timestamptz NOT NULL DEFAULT now(),
        PRIMARY KEY (app_id, token),
        UNIQUE (app_id, username_hash)
      )`);
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(`DROP TABLE public.account_tokens`);
  }
}
