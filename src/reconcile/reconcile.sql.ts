// The reconciler's statements (docs/operations.md, "Reconciliation"): the selection reads the
// latest row of each subscription a page at a time; the comparison reads stored snapshots in the
// form snapshotDigest reads; the passes and checks are its own tables (migration 1766400000000).
import { iso } from '../projection/customer-summary.sql.js';

export const reconcileSql = {
  /**
   * $1 app, $2 the last receipt of the previous page ('' first), $3 platforms, $4 page size: the
   * current row (neither revoked nor replaced by an upgrade, whose expiry can lie beyond the new
   * one's; then the greatest expiration, then transaction date) of each subscription (a receipt with a
   * row that expires or is pending), in receipt order, with when the reconciler last asked about it.
   * Keyset paging on (app_id, receipt_id) (transactions_receipt_idx): memory bounded by the page.
   */
  subscriptionPage: `
    SELECT DISTINCT ON (t.receipt_id)
           t.receipt_id AS "receiptId", t.platform, t.product_id AS "productId", t.expiration_date AS "expirationDate",
           t.grace_period_expiration_date AS "gracePeriodExpirationDate", t.renewal_intent AS "renewalIntent",
           t.is_billing_retry_period AS "isBillingRetryPeriod", t.is_pending AS "isPending", t.is_expired AS "isExpired",
           t.is_upgraded AS "isUpgraded", t.revocation_date AS "revocationDate", t.purchase_date AS "purchaseDate",
           t.first_event_at AS "firstEventAt", t.version_time AS "versionTime", c.checked_at AS "checkedAt"
    FROM read_model.transactions t
    LEFT JOIN public.reconcile_checks c ON c.app_id = t.app_id AND c.receipt_id = t.receipt_id
    WHERE t.app_id = $1 AND t.receipt_id > $2 AND t.platform = ANY($3::text[])
      AND (t.expiration_date IS NOT NULL OR t.is_pending IS TRUE)
    ORDER BY t.receipt_id, (t.revocation_date IS NULL AND t.is_upgraded IS NOT TRUE) DESC, t.expiration_date DESC NULLS LAST,
             t.occurred_at DESC, t.transaction_id DESC
    LIMIT $4`,

  /** $1 app, $2 transaction ids: their stored snapshots, times as the decoder writes them (snapshotDigest's form). */
  storedRows: `
    SELECT t.transaction_id, t.receipt_id, t.purchase_id, t.product_id, t.platform, t.sandbox,
           ${iso('t.purchase_date')} AS purchase_date, ${iso('t.last_renewal_date')} AS last_renewal_date,
           ${iso('t.renewal_date')} AS renewal_date, ${iso('t.expiration_date')} AS expiration_date, t.renewal_intent,
           ${iso('t.renewal_intent_change_date')} AS renewal_intent_change_date, t.snapshot_cancelation_reason,
           t.is_pending, t.is_acknowledged, t.is_consumed, t.is_billing_retry_period, t.is_trial_period, t.is_intro_period,
           t.is_expired, ${iso('t.grace_period_expiration_date')} AS grace_period_expiration_date,
           ${iso('t.revocation_date')} AS revocation_date, t.snapshot_is_upgraded, t.price_consent_status, t.discount_id,
           t.offer_type, t.offer_discount_type, t.offer_period, t.ownership_type, t.quantity, t.amount_usd, t.amount_micros, t.currency,
           t.revocation_type, t.refunded_share::float8 AS refunded_share, ${iso('t.version_time')} AS version_time
    FROM read_model.transactions t
    WHERE t.app_id = $1 AND t.transaction_id = ANY($2::text[])`,

  /** $1 app: where the last finished suspect pass left the rotating sample (the last receipt it sampled), if any. */
  sampleCursor: `
    SELECT sample_after FROM public.reconcile_runs
    WHERE app_id = $1 AND mode = 'suspect' AND finished_at IS NOT NULL
    ORDER BY finished_at DESC LIMIT 1`,

  /** $1 app, $2 mode: the pass of that mode that did not finish (a SIGKILL), to resume. */
  openRun: `SELECT run_id FROM public.reconcile_runs WHERE app_id = $1 AND mode = $2 AND finished_at IS NULL`,

  /** $1 app, $2 run id, $3 mode: a new pass, unless another started one of that mode meanwhile (read it with openRun). */
  startRun: `INSERT INTO public.reconcile_runs (app_id, run_id, mode) VALUES ($1, $2, $3) ON CONFLICT DO NOTHING`,

  /**
   * $1 app, $2 run id, $3 the last receipt its sample reached: the pass is over; every subscription
   * it asked about (the journal's 'sub:' items of the pass, published or skipped; not those that
   * failed) counts as checked when its answer was recorded; the next sample starts after $3. The
   * pass's journal, only needed to resume it, goes; so do passes finished over 30 days ago.
   */
  finishRun: `
    WITH checked AS (
      INSERT INTO public.reconcile_checks (app_id, receipt_id, checked_at)
      SELECT j.app_id, substr(j.item_key, 5), j.done_at
      FROM public.import_journal j
      WHERE j.app_id = $1 AND j.kind = 'reconcile' AND j.source_digest = $2 AND j.item_key LIKE 'sub:%'
      ON CONFLICT (app_id, receipt_id) DO UPDATE SET checked_at = greatest(public.reconcile_checks.checked_at, excluded.checked_at)
    ), journal AS (
      DELETE FROM public.import_journal WHERE app_id = $1 AND kind = 'reconcile' AND source_digest = $2
    ), old AS (
      DELETE FROM public.reconcile_runs WHERE app_id = $1 AND finished_at < now() - interval '30 days'
    )
    UPDATE public.reconcile_runs SET finished_at = now(), sample_after = $3 WHERE app_id = $1 AND run_id = $2`,
};
