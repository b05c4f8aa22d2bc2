import { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * Read models live in the `read_model` schema so a rebuild can build a complete new generation next
 * to it and swap schemas in one transaction. The event log, dead letters and bookkeeping stay in
 * `public`, outside any generation.
 */
export class ReadModels1763700000000 implements MigrationInterface {
  name = 'ReadModels1763700000000';

  async up(q: QueryRunner): Promise<void> {
    await q.query(`CREATE SCHEMA IF NOT EXISTS read_model`);

    await q.query(`
      CREATE TABLE read_model.customers (
        app_id               text        NOT NULL,
        application_username text        NOT NULL,
        first_seen_at        timestamptz NOT NULL,
        PRIMARY KEY (app_id, application_username)
      )`);
    await q.query(`CREATE INDEX customers_page_idx ON read_model.customers (app_id, first_seen_at, application_username)`);

    await q.query(`
      CREATE TABLE read_model.receipts (
        app_id               text        NOT NULL,
        receipt_id           text        NOT NULL,
        application_username text        NOT NULL,
        version_time         timestamptz NOT NULL,
        version_id           text        NOT NULL,
        PRIMARY KEY (app_id, receipt_id)
      )`);
    await q.query(`CREATE INDEX receipts_customer_idx ON read_model.receipts (app_id, application_username, receipt_id)`);

    await q.query(`
      CREATE TABLE read_model.transactions (
        app_id                     text        NOT NULL,
        transaction_id             text        NOT NULL,
        receipt_id                 text        NOT NULL,
        purchase_id                text        NOT NULL,
        product_id                 text        NOT NULL,
        platform                   text        NOT NULL,
        sandbox                    boolean,
        purchase_date              timestamptz,
        last_renewal_date          timestamptz,
        renewal_date               timestamptz,
        expiration_date            timestamptz,
        renewal_intent             text,
        renewal_intent_change_date timestamptz,
        cancelation_reason         text,
        is_pending                 boolean,
        is_acknowledged            boolean,
        is_consumed                boolean,
        is_billing_retry_period    boolean,
        is_trial_period            boolean,
        is_intro_period            boolean,
        is_expired                 boolean,
        price_consent_status       text,
        discount_id                text,
        quantity                   integer,
        amount_usd                 double precision,
        amount_micros              bigint,
        currency                   text,
        occurred_at                timestamptz NOT NULL,
        version_time               timestamptz NOT NULL,
        version_id                 text        NOT NULL,
        PRIMARY KEY (app_id, transaction_id)
      )`);
    await q.query(`CREATE INDEX transactions_page_idx ON read_model.transactions (app_id, occurred_at, transaction_id)`);
    await q.query(`CREATE INDEX transactions_receipt_idx ON read_model.transactions (app_id, receipt_id)`);

    await q.query(`
      CREATE TABLE read_model.processed_events (
        app_id   text NOT NULL,
        event_id text NOT NULL,
        PRIMARY KEY (app_id, event_id)
      )`);

    await q.query(`
      CREATE TABLE read_model.projection_offsets (
        topic       text    NOT NULL,
        partition   integer NOT NULL,
        next_offset bigint  NOT NULL,
        updated_at  timestamptz NOT NULL DEFAULT now(),
        PRIMARY KEY (topic, partition)
      )`);

    await q.query(`
      CREATE TABLE public.event_log (
        topic       text        NOT NULL,
        partition   integer     NOT NULL,
        "offset"    bigint      NOT NULL,
        key         text,
        value       bytea       NOT NULL,
        appended_at timestamptz NOT NULL DEFAULT now(),
        PRIMARY KEY (topic, partition, "offset")
      )`);
    // One row per topic partition; appenders lock it, which keeps offsets dense and committed in order.
    await q.query(`
      CREATE TABLE public.event_log_heads (
        topic       text    NOT NULL,
        partition   integer NOT NULL,
        next_offset bigint  NOT NULL,
        PRIMARY KEY (topic, partition)
      )`);

    await q.query(`
      CREATE TABLE public.dead_letters (
        id          bigserial   PRIMARY KEY,
        topic       text        NOT NULL,
        partition   integer     NOT NULL,
        "offset"    bigint      NOT NULL,
        key         text,
        value       bytea       NOT NULL,
        code        text        NOT NULL,
        reason      text        NOT NULL,
        created_at  timestamptz NOT NULL DEFAULT now(),
        UNIQUE (topic, partition, "offset")
      )`);
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(`DROP TABLE public.dead_letters`);
    await q.query(`DROP TABLE public.event_log_heads`);
    await q.query(`DROP TABLE public.event_log`);
    await q.query(`DROP SCHEMA read_model CASCADE`);
  }
}
