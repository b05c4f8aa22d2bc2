import { STORED_TRANSACTION_COLUMNS } from '../transactions/list-transactions/list-transactions.sql.js';

/**
 * $1 application, $2 transaction id: what the read models show of a transaction, in the contract's
 * field names (the API's own column list: a revoked snapshot replaces the row whole, so it carries
 * every shown field), and when the snapshot it shows was made.
 */
export const storedTransactionSql = `SELECT ${STORED_TRANSACTION_COLUMNS}, t.version_time AS "versionTime" FROM read_model.transactions t WHERE t.app_id = $1 AND t.transaction_id = $2`;
