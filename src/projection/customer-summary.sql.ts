// Fetching and storing customer summaries: the rules themselves are summarizeCustomer
// (src/customers/customer-summary.ts). Dates travel as normalised UTC text with microseconds,
// the form events carry, so nothing is rounded to JavaScript's milliseconds on the way.

export const iso = (column: string) => `to_char(${column} AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"')`;

/**
 * Every receipt the given customers ($1 app ids, $2 usernames) own, with its transactions (none:
 * one row of nulls). No row locks: batches touching the same receipt are serialised by the
 * writer's receipt locks (apply-batch.sql.ts, lockReceiptKeys), which is what keeps this read
 * from missing a concurrent batch's change. `besidesOwnWrites`: without the rows this transaction
 * wrote, except the ids in $3 (the writer holds the others' images already).
 */
const owned = (schema: string, besidesOwnWrites: boolean) => `
    SELECT r.app_id, r.application_username, r.receipt_id, t.*
    FROM unnest($1::text[], $2::text[]) AS k(app_id, name)
    JOIN ${schema}.receipts r ON r.app_id = k.app_id AND r.application_username = k.name
    LEFT JOIN LATERAL (
      SELECT t.transaction_id, t.purchase_id, t.product_id,
             ${iso('t.occurred_at')} AS occurred_at, ${iso('t.version_time')} AS version_time,
             ${iso('t.expiration_date')} AS expiration_date,
             ${iso('t.grace_period_expiration_date')} AS grace_period_expiration_date,
             ${iso('t.revocation_date')} AS revocation_date,
             t.is_pending, t.is_upgraded, t.is_expired, t.is_billing_retry_period, t.cancelation_reason,
             ${iso('t.last_renewal_date')} AS last_renewal_date, t.renewal_intent,
             ${iso('t.purchase_date')} AS purchase_date, ${iso('t.renewal_date')} AS renewal_date, t.is_consumed,
             t.snapshot_is_upgraded, t.snapshot_cancelation_reason
      FROM ${schema}.transactions t WHERE t.app_id = r.app_id AND t.receipt_id = r.receipt_id
      ${besidesOwnWrites ? 'AND (t.xmin <> pg_current_xact_id()::xid OR t.transaction_id = ANY($3::text[]))' : ''}
    ) t ON true
    ORDER BY r.app_id, r.application_username, r.receipt_id COLLATE "C"`;

export const customerSummarySql = (schema: string) => ({
  owned: owned(schema, false),
  ownedBesidesOwnWrites: owned(schema, true),

  /** Stores computed summaries; one row per customer, in key order. Without receipt_ids, the stored list stays. */
  store: `
    UPDATE ${schema}.customers c SET
      receipt_ids = CASE WHEN s.receipt_ids IS NULL THEN c.receipt_ids ELSE ARRAY(SELECT json_array_elements_text(s.receipt_ids)) END,
      transaction_count = s.transaction_count,
      last_purchase_date = s.last_purchase_date, expiration_date = s.expiration_date,
      last_renewal_date = s.last_renewal_date, renewal_intent = s.renewal_intent,
      current_product_id = s.current_product_id, grace_from = s.grace_from, billing_retry = s.billing_retry,
      grants_digest = s.grants_digest::bigint
    FROM json_to_recordset($1::json) AS s(app_id text, application_username text, receipt_ids json, transaction_count int,
      last_purchase_date timestamptz, expiration_date timestamptz, last_renewal_date timestamptz, renewal_intent text,
      current_product_id text, grace_from timestamptz, billing_retry boolean, grants_digest text)
    WHERE c.app_id = s.app_id AND c.application_username = s.application_username`,

  /** A page of customer keys after ($1, $2), for re-deriving every summary in bounded chunks. */
  keysAfter: `
    SELECT app_id, application_username FROM ${schema}.customers
    WHERE (app_id, application_username) > ($1, $2) ORDER BY app_id, application_username LIMIT $3`,
});
