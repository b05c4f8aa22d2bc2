// The projection's writes, one statement per table. Each takes a JSON array of row images sorted by
// primary key, so concurrent batches lock rows in the same order and cannot deadlock each other.

const newer = (a: string, b: string) =>
  `(${a}.version_time > ${b}.version_time OR (${a}.version_time = ${b}.version_time AND ${a}.version_id COLLATE "C" > ${b}.version_id COLLATE "C"))`;

export const sql = (schema: string) => ({
  /** Creates the partition's row if new and locks it: a second consumer of the partition waits here. */
  lockOffset: `
    INSERT INTO ${schema}.projection_offsets AS o (topic, partition, next_offset) VALUES ($1, $2, 0)
    ON CONFLICT (topic, partition) DO UPDATE SET next_offset = o.next_offset
    RETURNING next_offset`,

  /** Returns the (app_id, event_id) pairs not applied before; the others are repeats to ignore. */
  claimEvents: `
    INSERT INTO ${schema}.processed_events (app_id, event_id)
    SELECT * FROM unnest($1::text[], $2::text[]) AS e(app_id, event_id) ORDER BY 1, 2
    ON CONFLICT DO NOTHING
    RETURNING app_id, event_id`,

  /** New rows only; RETURNING says which keys this batch created (counted +1 on their day). */
  insertNewTransactions: `
    INSERT INTO ${schema}.transactions
    SELECT * FROM json_populate_recordset(NULL::${schema}.transactions, $1::json) ORDER BY app_id, transaction_id
    ON CONFLICT (app_id, transaction_id) DO NOTHING
    RETURNING app_id, transaction_id`,

  /** Existing rows the batch touches, locked, with the time their day count is filed under. */
  lockTransactions: `
    SELECT t.app_id, t.transaction_id, t.occurred_at FROM ${schema}.transactions t
    JOIN unnest($1::text[], $2::text[]) AS k(app_id, id) ON t.app_id = k.app_id AND t.transaction_id = k.id
    ORDER BY t.app_id, t.transaction_id FOR UPDATE OF t`,

  upsertTransactions: `
    INSERT INTO ${schema}.transactions AS t
    SELECT * FROM json_populate_recordset(NULL::${schema}.transactions, $1::json) ORDER BY app_id, transaction_id
    ON CONFLICT (app_id, transaction_id) DO UPDATE SET
      receipt_id = excluded.receipt_id, purchase_id = excluded.purchase_id, product_id = excluded.product_id,
      platform = excluded.platform, sandbox = excluded.sandbox, purchase_date = excluded.purchase_date,
      last_renewal_date = excluded.last_renewal_date, renewal_date = excluded.renewal_date,
      expiration_date = excluded.expiration_date, renewal_intent = excluded.renewal_intent,
      renewal_intent_change_date = excluded.renewal_intent_change_date, cancelation_reason = excluded.cancelation_reason,
      is_pending = excluded.is_pending, is_acknowledged = excluded.is_acknowledged, is_consumed = excluded.is_consumed,
      is_billing_retry_period = excluded.is_billing_retry_period, is_trial_period = excluded.is_trial_period,
      is_intro_period = excluded.is_intro_period, is_expired = excluded.is_expired,
      price_consent_status = excluded.price_consent_status, discount_id = excluded.discount_id,
      quantity = excluded.quantity, amount_usd = excluded.amount_usd, amount_micros = excluded.amount_micros,
      currency = excluded.currency,
      occurred_at = LEAST(t.occurred_at, excluded.occurred_at),
      version_time = excluded.version_time, version_id = excluded.version_id
    WHERE ${newer('excluded', 't')}`,

  /** A stale snapshot still counts towards the earliest occurred_at. */
  lowerOccurredAt: `
    UPDATE ${schema}.transactions t SET occurred_at = x.occurred_at
    FROM json_populate_recordset(NULL::${schema}.transactions, $1::json) x
    WHERE t.app_id = x.app_id AND t.transaction_id = x.transaction_id AND x.occurred_at < t.occurred_at`,

  upsertReceipts: `
    INSERT INTO ${schema}.receipts AS r
    SELECT * FROM json_populate_recordset(NULL::${schema}.receipts, $1::json) ORDER BY app_id, receipt_id
    ON CONFLICT (app_id, receipt_id) DO UPDATE SET
      application_username = excluded.application_username,
      version_time = excluded.version_time, version_id = excluded.version_id
    WHERE ${newer('excluded', 'r')}`,

  receiptOwners: `
    SELECT r.app_id, r.receipt_id, r.application_username FROM ${schema}.receipts r
    JOIN unnest($1::text[], $2::text[]) AS k(app_id, id) ON r.app_id = k.app_id AND r.receipt_id = k.id`,

  insertNewCustomers: `
    INSERT INTO ${schema}.customers (app_id, application_username, first_seen_at)
    SELECT * FROM unnest($1::text[], $2::text[], $3::timestamptz[]) ORDER BY 1, 2
    ON CONFLICT (app_id, application_username) DO NOTHING
    RETURNING app_id, application_username`,

  /** Every customer row the batch changes, locked once and in key order. */
  lockCustomers: `
    SELECT c.app_id, c.application_username, c.first_seen_at FROM ${schema}.customers c
    JOIN unnest($1::text[], $2::text[]) AS k(app_id, name) ON c.app_id = k.app_id AND c.application_username = k.name
    ORDER BY c.app_id, c.application_username FOR UPDATE OF c`,

  lowerFirstSeen: `
    UPDATE ${schema}.customers c SET first_seen_at = k.first_seen_at
    FROM unnest($1::text[], $2::text[], $3::timestamptz[]) AS k(app_id, name, first_seen_at)
    WHERE c.app_id = k.app_id AND c.application_username = k.name AND k.first_seen_at < c.first_seen_at`,

  addDayCounts: (table: 'transaction_day_counts' | 'customer_day_counts') => `
    INSERT INTO ${schema}.${table} AS d (app_id, day, n)
    SELECT * FROM unnest($1::text[], $2::date[], $3::bigint[]) ORDER BY 1, 2
    ON CONFLICT (app_id, day) DO UPDATE SET n = d.n + excluded.n`,

  /** A day whose last row moved away is removed, as a from-scratch projection would never write it. */
  dropEmptyDays: (table: 'transaction_day_counts' | 'customer_day_counts') => `
    DELETE FROM ${schema}.${table} d USING unnest($1::text[], $2::date[]) AS k(app_id, day)
    WHERE d.app_id = k.app_id AND d.day = k.day AND d.n = 0`,

  insertDeadLetters: `
    INSERT INTO public.dead_letters (topic, partition, "offset", key, value, code, reason)
    SELECT $1, $2, o, k, v, c, r FROM unnest($3::bigint[], $4::text[], $5::bytea[], $6::text[], $7::text[]) AS d(o, k, v, c, r)
    ON CONFLICT (topic, partition, "offset") DO NOTHING`,

  storeOffset: `
    UPDATE ${schema}.projection_offsets SET next_offset = GREATEST(next_offset, $3), updated_at = now()
    WHERE topic = $1 AND partition = $2`,
});
