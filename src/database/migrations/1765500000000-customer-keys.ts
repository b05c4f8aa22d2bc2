import { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * Crypto-shredding (docs/privacy.md, "Kafka"): public.customer_keys holds one AES-256 key per
 * application and customer (by the erasure hash of their username), made when the service first
 * publishes an event naming them with CRYPTO_SHREDDING on, and deleted when they are erased. Not a
 * read-model table: a rebuild must not bring a deleted key back. Frozen SQL.
 */
export class CustomerKeys1765500000000 implements MigrationInterface {
  name = 'CustomerKeys1765500000000';

  async up(q: QueryRunner): Promise<void> {
    await q.query(`
      CREATE TABLE public.customer_keys (
        app_id        text        NOT NULL,
        username_hash text        NOT NULL CHECK (username_hash ~ '^[0-9a-f]{64}$'),
        key           bytea       NOT NULL CHECK (octet_length(key) = 32),
        created_at    timestamptz NOT NULL DEFAULT now(),
        PRIMARY KEY (app_id, username_hash)
      )`);
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(`DROP TABLE public.customer_keys`);
  }
}
