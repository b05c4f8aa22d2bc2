// What POST /v2/purchases reads of the read models, on the primary: who owns the receipts, and which
// of the store's events they already hold.

export const recordPurchaseSql = {
  /** $1 application, $2 receipt ids: each stored owner (null: erased) and its link's version, in whole milliseconds. */
  owners: `
    SELECT receipt_id, application_username, floor(extract(epoch FROM version_time) * 1000)::float8 AS ms, version_id
    FROM read_model.receipts WHERE app_id = $1 AND receipt_id = ANY($2::text[])`,

  /**
   * $1 application, $2 transaction ids, $3 event times, $4 event ids: the events whose transaction
   * is stored at that version or a newer one (the projection's order: time, then id in byte order).
   */
  applied: `
    SELECT w.id FROM unnest($2::text[], $3::timestamptz[], $4::text[]) AS w(transaction_id, time, id)
    JOIN read_model.transactions t ON t.app_id = $1 AND t.transaction_id = w.transaction_id
    WHERE t.version_time > w.time OR (t.version_time = w.time AND t.version_id COLLATE "C" >= w.id COLLATE "C")`,
};
