import { iso } from '../../projection/customer-summary.sql.js';

/**
 * For customerInfo.entitlements: every transaction of the receipts the page's customers ($2) own,
 * with the entitlements its product grants under the application's ($1) current definitions, in
 * one statement per page (bounded by the page). Nothing when the application defines no
 * entitlement. Dates as normalised UTC text, as the lifecycle rules read them.
 */
export const customerEntitlementsSql = `
  WITH d AS (
    SELECT product_id, array_agg(entitlement ORDER BY entitlement COLLATE "C") AS entitlements
    FROM public.entitlement_products WHERE app_id = $1 GROUP BY product_id
  )
  SELECT r.application_username AS "applicationUsername", t.transaction_id AS "transactionId", t.receipt_id AS "receiptId",
         t.purchase_id AS "purchaseId", t.product_id AS "productId",
         ${iso('t.occurred_at')} AS "transactionDate", ${iso('t.version_time')} AS "snapshotTime",
         ${iso('t.expiration_date')} AS "expirationDate", ${iso('t.grace_period_expiration_date')} AS "gracePeriodExpirationDate",
         ${iso('t.revocation_date')} AS "revocationDate", t.is_pending AS "isPending", t.is_upgraded AS "isUpgraded",
         t.is_expired AS "isExpired", t.is_billing_retry_period AS "isBillingRetryPeriod", t.cancelation_reason AS "cancelationReason",
         ${iso('t.last_renewal_date')} AS "lastRenewalDate", t.renewal_intent AS "renewalIntent",
         ${iso('t.purchase_date')} AS "purchaseDate", ${iso('t.renewal_date')} AS "renewalDate", t.is_consumed AS "isConsumed",
         t.snapshot_is_upgraded AS "snapshotIsUpgraded", t.snapshot_cancelation_reason AS "snapshotCancelationReason",
         coalesce(d.entitlements, '{}') AS entitlements
  FROM read_model.receipts r
  JOIN read_model.transactions t ON t.app_id = r.app_id AND t.receipt_id = r.receipt_id
  LEFT JOIN d ON d.product_id = t.product_id
  WHERE r.app_id = $1 AND r.application_username = ANY($2::text[]) AND EXISTS (SELECT 1 FROM d)`;
