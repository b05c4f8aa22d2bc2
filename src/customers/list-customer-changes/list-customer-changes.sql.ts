/** Every customer of the application: paging.total of a change-feed page. */
export const customerTotalSql = `SELECT coalesce(sum(n), 0)::text AS total FROM read_model.customer_day_counts WHERE app_id = $1`;
