// The bulk path of a rebuild (docs/operations.md, "Rebuild"): the log is first staged, decoded, into
// one unlogged table without indexes, then folded into the generation's tables by set-based
// statements, with the secondary indexes built after the load. The fold applies the projection's
// rules (src/projection/project-events.ts) to all events of a key at once: newest snapshot wins,
// the earliest event dates a transaction, receipt.linked beats a username on a transaction.

import { VISIBLE_COLUMNS, shownRow } from '../../change-feed/change-positions.sql.js';
import { REDACTED_PATTERN } from '../../customers/erase-customer/erasure-hash.js';
import { earns, revenueCellColumns } from '../../revenue/revenue-cell.sql.js';

/** What the fold copies from a transaction's winning snapshot: its shown columns, its version and content digest. */
const SNAPSHOT_COLUMNS = [...VISIBLE_COLUMNS.transactions, 'version_time', 'version_id', 'snapshot_digest'];
/** Provenance: taken from the event that made the winning state (mergeTransaction), not from the winner. */
const STATE_COLUMNS: readonly string[] = ['state_event_id', 'state_source', 'state_received_at'];
/** A column of the folded row: the winner's `w`, or provenance's `p`. */
const folded = (c: string) => (STATE_COLUMNS.includes(c) ? `p.${c}` : `w.${c}`);

export const STAGED_TABLE = 'staged_events';

/** What stageEvents writes per event, in COPY order. */
export const STAGED_COLUMNS = [
  'kind',
  'app_id',
  'transaction_id',
  ...SNAPSHOT_COLUMNS,
  'first_event_at',
  'occurred_at',
  'application_username',
  'log_partition',
  'log_offset',
] as const;

export const bulkSql = (schema: string) => ({
  /**
   * One row per staged event: a transaction.updated as its row image plus the username it names,
   * a receipt.linked as (receipt, username); a snapshot's snapshot_digest breaks ties between equal
   * versions as the live path does. Unlogged: the generation is rebuilt from the log anyway.
   */
  createStaged: `
    CREATE UNLOGGED TABLE ${schema}.${STAGED_TABLE} AS
      SELECT *, NULL::"char" AS kind, NULL::text AS application_username, NULL::int AS log_partition, NULL::bigint AS log_offset
      FROM ${schema}.transactions WITH NO DATA;
    ALTER TABLE ${schema}.${STAGED_TABLE} DROP COLUMN change_position`,

  staged: `SELECT to_regclass('${schema}.${STAGED_TABLE}') IS NOT NULL AS staged`,

  copyStaged: `COPY ${schema}.${STAGED_TABLE} (${STAGED_COLUMNS.join(', ')}) FROM STDIN`,

  /** Secondary indexes of the live tables, to drop from the generation before the load and build after it. */
  secondaryIndexes: `
    SELECT i.indexdef FROM pg_indexes i
    WHERE i.schemaname = 'read_model' AND NOT EXISTS (
      SELECT 1 FROM pg_index x WHERE x.indexrelid = ('read_model.' || quote_ident(i.indexname))::regclass AND x.indisprimary)
    ORDER BY i.tablename, i.indexname`,
  generationIndexes: `
    SELECT quote_ident(n.nspname) || '.' || quote_ident(c.relname) AS name FROM pg_index x
    JOIN pg_class c ON c.oid = x.indexrelid JOIN pg_namespace n ON n.oid = c.relnamespace
    WHERE n.nspname = '${schema}' AND NOT x.indisprimary`,

  /**
   * Per transaction, the newest snapshot (time, then id in byte order, then content digest: the
   * order of snapshotWins) whole, dated by the earliest
   * event's time when it carries no charge date. keepLivePositions (a rebuild, not a verify) keeps the live row's change
   * position where the shown values are the same (a rebuild that changes nothing replays nothing).
   *
   * Provenance replays mergeTransaction in log order: the snapshots that won when they came (ranked
   * above every one before them in the partition) form a chain; the row's provenance is the first of
   * the chain's last run saying what the winner says.
   */
  foldTransactions: (keepLivePositions: boolean) => `
    WITH ranked AS (
      SELECT s.app_id, s.transaction_id, s.log_partition, s.log_offset, s.snapshot_digest, ${STATE_COLUMNS.map((c) => `s.${c}`).join(', ')},
             dense_rank() OVER (PARTITION BY s.app_id, s.transaction_id
                                ORDER BY s.version_time, s.version_id COLLATE "C", s.snapshot_digest COLLATE "C") AS v
      FROM ${schema}.${STAGED_TABLE} s WHERE s.kind = 't'
    ), chain AS (
      SELECT * FROM (
        SELECT r.*, max(r.v) OVER (PARTITION BY r.app_id, r.transaction_id ORDER BY r.log_partition, r.log_offset
                                   ROWS BETWEEN UNBOUNDED PRECEDING AND 1 PRECEDING) AS best_before
        FROM ranked r) x
      WHERE x.best_before IS NULL OR x.v > x.best_before
    ), runs AS (
      SELECT c.*, count(*) FILTER (WHERE c.snapshot_digest IS DISTINCT FROM c.final)
                    OVER (PARTITION BY c.app_id, c.transaction_id ORDER BY c.log_partition, c.log_offset
                          ROWS BETWEEN CURRENT ROW AND UNBOUNDED FOLLOWING) AS differing_after
      FROM (SELECT chain.*, first_value(chain.snapshot_digest) OVER (PARTITION BY chain.app_id, chain.transaction_id ORDER BY chain.v DESC) AS final
            FROM chain) c
    ), p AS (
      SELECT DISTINCT ON (app_id, transaction_id) app_id, transaction_id, ${STATE_COLUMNS.join(', ')}
      FROM runs WHERE differing_after = 0
      ORDER BY app_id, transaction_id, log_partition, log_offset
    )
    INSERT INTO ${schema}.transactions (app_id, transaction_id, ${SNAPSHOT_COLUMNS.join(', ')}, snapshot_is_upgraded, snapshot_cancelation_reason, first_event_at, occurred_at, change_position)
    SELECT w.app_id, w.transaction_id, ${SNAPSHOT_COLUMNS.map(folded).join(', ')}, w.is_upgraded, w.cancelation_reason, w.first_event,
           coalesce(w.last_renewal_date, w.renewal_date, w.purchase_date, w.first_event),
           ${keepLivePositions ? `CASE WHEN (${VISIBLE_COLUMNS.transactions.map(folded).join(', ')}) IS NOT DISTINCT FROM ${shownRow('l', 'transactions')} THEN l.change_position END` : 'NULL'}
    FROM (
      SELECT DISTINCT ON (app_id, transaction_id) s.*,
             min(s.version_time) OVER (PARTITION BY s.app_id, s.transaction_id) AS first_event
      FROM ${schema}.${STAGED_TABLE} s WHERE s.kind = 't'
      ORDER BY s.app_id, s.transaction_id, s.version_time DESC, s.version_id COLLATE "C" DESC, s.snapshot_digest COLLATE "C" DESC
    ) w
    JOIN p ON p.app_id = w.app_id AND p.transaction_id = w.transaction_id
    ${keepLivePositions ? `LEFT JOIN read_model.transactions l ON l.app_id = w.app_id AND l.transaction_id = w.transaction_id` : ''}`,

  /**
   * receipt.linked beats a transaction's username; among receipt.linked the newest, among the others
   * the earliest, by (time, id, username in byte order) as linkWins orders them.
   */
  foldReceipts: `
    INSERT INTO ${schema}.receipts (app_id, receipt_id, application_username, explicit, version_time, version_id)
    SELECT DISTINCT ON (app_id, receipt_id) app_id, receipt_id, application_username, kind = 'l', version_time, version_id
    FROM ${schema}.${STAGED_TABLE} WHERE application_username IS NOT NULL AND kind IN ('t', 'l')
    ORDER BY app_id, receipt_id, kind = 'l' DESC,
      CASE WHEN kind = 'l' THEN version_time END DESC, CASE WHEN kind = 'l' THEN version_id END COLLATE "C" DESC,
      CASE WHEN kind = 'l' THEN application_username END COLLATE "C" DESC,
      version_time, version_id COLLATE "C", application_username COLLATE "C"`,

  /**
   * A customer is first seen at the earliest event naming them, whether or not its link won; once
   * erased, at the earliest event naming them dated after the erasure (docs/privacy.md). The hash is
   * computed only when the log holds an erasure (foldErasures ran first).
   */
  foldCustomers: `
    INSERT INTO ${schema}.customers (app_id, application_username, first_seen_at)
    SELECT s.app_id, s.application_username, min(s.version_time) FROM ${schema}.${STAGED_TABLE} s
    WHERE s.application_username IS NOT NULL AND s.kind IN ('t', 'l') AND s.application_username !~ '${REDACTED_PATTERN}'
      AND (NOT EXISTS (SELECT 1 FROM ${schema}.erasures) OR NOT EXISTS (
        SELECT 1 FROM ${schema}.erasures e
        WHERE e.app_id = s.app_id AND e.username_hash = public.erasure_hash(s.app_id, s.application_username) AND s.version_time <= e.erased_at))
    GROUP BY 1, 2`,

  /** Each erased username's latest erasure (the live path keeps the same: applyErasures). */
  foldErasures: `
    INSERT INTO ${schema}.erasures (app_id, username_hash, erased_at)
    SELECT app_id, CASE WHEN kind = 'e' THEN application_username ELSE public.erasure_hash(app_id, application_username) END, max(version_time)
    FROM ${schema}.${STAGED_TABLE} WHERE kind IN ('e', 'n') GROUP BY 1, 2`,

  /**
   * A receipt whose winning link was dated at or before its customer's erasure has no owner, nor one
   * whose winning link names a redacted username (a sealed one whose key is gone, docs/privacy.md).
   */
  eraseReceiptOwners: `
    UPDATE ${schema}.receipts r SET application_username = NULL
    WHERE r.application_username IS NOT NULL AND (r.application_username ~ '${REDACTED_PATTERN}' OR EXISTS (
      SELECT 1 FROM ${schema}.erasures e
      WHERE e.app_id = r.app_id AND e.username_hash = public.erasure_hash(r.app_id, r.application_username) AND r.version_time <= e.erased_at))`,

  foldDayCounts: `
    INSERT INTO ${schema}.transaction_day_counts (app_id, day, n)
    SELECT app_id, (occurred_at AT TIME ZONE 'UTC')::date, count(*) FROM ${schema}.transactions GROUP BY 1, 2;
    INSERT INTO ${schema}.transaction_filter_day_counts (app_id, product_id, platform, sandbox, day, n)
    SELECT app_id, product_id, platform, sandbox IS TRUE, (occurred_at AT TIME ZONE 'UTC')::date, count(*) FROM ${schema}.transactions GROUP BY 1, 2, 3, 4, 5;
    INSERT INTO ${schema}.customer_day_counts (app_id, day, n)
    SELECT app_id, (first_seen_at AT TIME ZONE 'UTC')::date, count(*) FROM ${schema}.customers GROUP BY 1, 2;
    INSERT INTO ${schema}.revenue_day_sums
    SELECT app_id, day, platform, product_id, currency, after_first_year, sum(n), sum(unpriced),
           sum(gross_micros), sum(gross_micros * refund_share), sum(gross_usd), sum(gross_usd * refund_share)
    FROM (SELECT ${revenueCellColumns('t')} FROM ${schema}.transactions t WHERE ${earns('t')}) c GROUP BY 1, 2, 3, 4, 5, 6`,

  dropStaged: `DROP TABLE ${schema}.${STAGED_TABLE}`,
});
