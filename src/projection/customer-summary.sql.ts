// The customer summary: facts aggregated over the transactions of the receipts a customer currently
// owns. customerInfo is derived from them at request time (activeSubscriber compares active_until
// with now), so they only change when events change receipts or transactions.

const facts = (schema: string, key: string) => `
  SELECT coalesce((SELECT array_agg(r.receipt_id ORDER BY r.receipt_id) FROM ${schema}.receipts r
                   WHERE r.app_id = ${key}.app_id AND r.application_username = ${key}.application_username), '{}') AS receipt_ids,
         a.transaction_count, a.last_purchase_date, a.active_until,
         l.expiration_date, l.last_renewal_date, l.renewal_intent
  FROM (SELECT count(*)::int AS transaction_count, max(t.purchase_date) AS last_purchase_date,
               max(t.expiration_date) FILTER (WHERE t.is_expired IS NOT TRUE) AS active_until
        FROM ${schema}.receipts rc JOIN ${schema}.transactions t ON t.app_id = rc.app_id AND t.receipt_id = rc.receipt_id
        WHERE rc.app_id = ${key}.app_id AND rc.application_username = ${key}.application_username) a
  LEFT JOIN LATERAL (
        SELECT t.expiration_date, t.last_renewal_date, t.renewal_intent
        FROM ${schema}.receipts rc JOIN ${schema}.transactions t ON t.app_id = rc.app_id AND t.receipt_id = rc.receipt_id
        WHERE rc.app_id = ${key}.app_id AND rc.application_username = ${key}.application_username AND t.expiration_date IS NOT NULL
        ORDER BY t.expiration_date DESC, t.transaction_id DESC LIMIT 1) l ON true`;

const assign = `
  receipt_ids = f.receipt_ids, transaction_count = f.transaction_count, last_purchase_date = f.last_purchase_date,
  active_until = f.active_until, expiration_date = f.expiration_date, last_renewal_date = f.last_renewal_date,
  renewal_intent = f.renewal_intent`;

export const customerSummarySql = (schema: string) => ({
  /** Recomputes the summaries of the given customers ($1 app ids, $2 usernames, sorted by both). */
  refresh: `
    UPDATE ${schema}.customers c SET ${assign}
    FROM unnest($1::text[], $2::text[]) AS k(app_id, application_username)
    CROSS JOIN LATERAL (${facts(schema, 'k')}) f
    WHERE c.app_id = k.app_id AND c.application_username = k.application_username`,
  refreshAll: `
    UPDATE ${schema}.customers c SET ${assign}
    FROM ${schema}.customers k
    CROSS JOIN LATERAL (${facts(schema, 'k')}) f
    WHERE c.app_id = k.app_id AND c.application_username = k.application_username`,
});
