import { randomBytes } from 'node:crypto';
import { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * Customer erasure (docs/privacy.md). Frozen SQL.
 * - public.erasure_key: 64 random bytes made once; public.erasure_hash(app, name) is
 *   HMAC-SHA256(key, app || 0x00 || name) in hex, computed from the key's inner and outer pads
 *   (PostgreSQL has sha256 but no HMAC without pgcrypto). `erased:<hash>` (a redacted username)
 *   stands for its own hash.
 * - read_model.erasures: per application and username hash, the latest erasure time (a read-model
 *   table: every generation folds it from the log's customer.erased events).
 * - read_model.receipts.application_username may be NULL: a receipt whose winning link named an
 *   erased customer keeps its link's version (so later links compete as before) but no owner.
 * - public.feed_deletions: the change feed's deletion entries (row key, position).
 * - public.erasure_audit: who erased when, without the username.
 */
export class CustomerErasure1765200000000 implements MigrationInterface {
  name = 'CustomerErasure1765200000000';

  async up(q: QueryRunner): Promise<void> {
    const key = randomBytes(64);
    const pad = (byte: number) => Buffer.from(key.map((b) => b ^ byte));
    await q.query(`
      CREATE TABLE public.erasure_key (
        only_row   boolean     PRIMARY KEY DEFAULT true CHECK (only_row),
        key        bytea       NOT NULL CHECK (octet_length(key) = 64),
        inner_pad  bytea       NOT NULL,
        outer_pad  bytea       NOT NULL,
        created_at timestamptz NOT NULL DEFAULT now()
      )`);
    await q.query(`INSERT INTO public.erasure_key (key, inner_pad, outer_pad) VALUES ($1, $2, $3)`, [key, pad(0x36), pad(0x5c)]);
    await q.query(`
      CREATE FUNCTION public.erasure_hash(app text, name text) RETURNS text LANGUAGE sql STABLE PARALLEL SAFE AS $$
        SELECT CASE WHEN name ~ '^erased:[0-9a-f]{64}$' THEN substr(name, 8)
          ELSE encode(sha256(k.outer_pad || sha256(k.inner_pad || convert_to(app, 'UTF8') || '\\x00'::bytea || convert_to(name, 'UTF8'))), 'hex') END
        FROM public.erasure_key k
      $$`);
    await q.query(`
      CREATE TABLE read_model.erasures (
        app_id        text        NOT NULL,
        username_hash text        NOT NULL,
        erased_at     timestamptz NOT NULL,
        PRIMARY KEY (app_id, username_hash)
      )`);
    await q.query(`ALTER TABLE read_model.receipts ALTER COLUMN application_username DROP NOT NULL`);
    await q.query(`
      CREATE TABLE public.feed_deletions (
        app_id          text        NOT NULL,
        feed_table      text        NOT NULL CHECK (feed_table IN ('customers', 'transactions')),
        row_key         text        NOT NULL,
        change_position bigint      NOT NULL DEFAULT pg_current_xact_id()::text::bigint,
        deleted_at      timestamptz NOT NULL DEFAULT now(),
        PRIMARY KEY (app_id, feed_table, change_position, row_key)
      )`);
    await q.query(`
      CREATE TABLE public.erasure_audit (
        id           bigserial   PRIMARY KEY,
        app_id       text        NOT NULL,
        event_id     text        NOT NULL,
        subject      text,
        via          text        NOT NULL,
        requested_at timestamptz NOT NULL DEFAULT now()
      )`);
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(`DROP TABLE public.erasure_audit`);
    await q.query(`DROP TABLE public.feed_deletions`);
    await q.query(`DELETE FROM read_model.receipts WHERE application_username IS NULL`);
    await q.query(`ALTER TABLE read_model.receipts ALTER COLUMN application_username SET NOT NULL`);
    await q.query(`DROP TABLE read_model.erasures`);
    await q.query(`DROP FUNCTION public.erasure_hash(text, text)`);
    await q.query(`DROP TABLE public.erasure_key`);
  }
}
