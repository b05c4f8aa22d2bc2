/** Every transaction of the application: paging.total of a change-feed page. */
export const transactionTotalSql = `SELECT coalesce(sum(n), 0)::text AS total FROM read_model.transaction_day_counts WHERE app_id = $1`;
