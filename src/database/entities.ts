import { Check, Column, Entity, Index, JoinColumn, ManyToOne, PrimaryColumn, PrimaryGeneratedColumn, Unique } from 'typeorm';

// Entities describe the tables for TypeORM (metadata, schema drift checks); the read side and the
// projection write plain SQL against them. Timestamps are timestamptz throughout.

@Entity({ schema: 'read_model', name: 'customers' })
// customers_page_idx, customers_access_end_idx and customers_grace_idx carry the columns the filters
// read (INCLUDE): TypeORM cannot express INCLUDE, so the migrations own these indexes and the schema
// diff leaves them alone
@Index('customers_page_idx', { synchronize: false })
@Index('customers_changes_idx', ['appId', 'changePosition', 'applicationUsername'])
@Index('customers_unstamped_idx', ['appId'], { where: 'change_position IS NULL' })
@Index('customers_access_end_idx', { synchronize: false })
@Index('customers_product_idx', ['appId', 'currentProductId', 'firstSeenAt', 'applicationUsername'])
@Index('customers_grace_idx', { synchronize: false })
export class CustomerEntity {
  @PrimaryColumn({ name: 'app_id', type: 'text' }) appId: string;
  @PrimaryColumn({ name: 'application_username', type: 'text' }) applicationUsername: string;
  @Column({ name: 'first_seen_at', type: 'timestamptz' }) firstSeenAt: Date;
  // The summary the projection keeps (summarizeCustomer); customerInfo is derived from it.
  @Column({ name: 'receipt_ids', type: 'text', array: true, default: () => "'{}'" }) receiptIds: string[];
  @Column({ name: 'transaction_count', type: 'integer', default: 0 }) transactionCount: number;
  @Column({ name: 'last_purchase_date', type: 'timestamptz', nullable: true }) lastPurchaseDate: Date | null;
  @Column({ name: 'expiration_date', type: 'timestamptz', nullable: true }) expirationDate: Date | null;
  @Column({ name: 'last_renewal_date', type: 'timestamptz', nullable: true }) lastRenewalDate: Date | null;
  @Column({ name: 'renewal_intent', type: 'text', nullable: true }) renewalIntent: string | null;
  // The status facts (customerStatus): the current subscription's product, from when its access lasts only by a grace period, billing retried.
  @Column({ name: 'current_product_id', type: 'text', nullable: true }) currentProductId: string | null;
  @Column({ name: 'grace_from', type: 'timestamptz', nullable: true }) graceFrom: Date | null;
  @Column({ name: 'billing_retry', type: 'boolean', default: false }) billingRetry: boolean;
  /** What its entitlements read of its transactions, hashed and summed (grantsDigest): a change moves the row in the change feed. */
  @Column({ name: 'grants_digest', type: 'bigint', nullable: true, default: 0 }) grantsDigest: string | null;
  /** Id of the PostgreSQL transaction that last changed what the API shows (docs/change-feed.md). */
  @Column({ name: 'change_position', type: 'bigint', nullable: true }) changePosition: string | null;
}

/** Exact transactions per application and UTC day of occurred_at, kept by the projection. */
@Entity({ schema: 'read_model', name: 'transaction_day_counts' })
export class TransactionDayCountEntity {
  @PrimaryColumn({ name: 'app_id', type: 'text' }) appId: string;
  @PrimaryColumn({ type: 'date' }) day: string;
  @Column({ type: 'bigint' }) n: string;
}

/** Exact transactions per application, filter values and UTC day of occurred_at, kept by the projection. */
@Entity({ schema: 'read_model', name: 'transaction_filter_day_counts' })
export class TransactionFilterDayCountEntity {
  @PrimaryColumn({ name: 'app_id', type: 'text' }) appId: string;
  @PrimaryColumn({ name: 'product_id', type: 'text' }) productId: string;
  @PrimaryColumn({ type: 'text' }) platform: string;
  /** sandbox IS TRUE of the rows counted: false stands for every row not marked sandbox. */
  @PrimaryColumn({ type: 'boolean' }) sandbox: boolean;
  @PrimaryColumn({ type: 'date' }) day: string;
  @Column({ type: 'bigint' }) n: string;
}

/**
 * Exact customers per application, the values the customer filters read and first-seen UTC week,
 * kept by the projection (docs/api.md "How the pages stay fast"): where a filtered page starts. No access end is '-infinity', no grace 'infinity'.
 */
@Entity({ schema: 'read_model', name: 'customer_end_weeks' })
export class CustomerEndWeekEntity {
  @PrimaryColumn({ name: 'app_id', type: 'text' }) appId: string;
  @PrimaryColumn({ name: 'end_day', type: 'date' }) endDay: string;
  @PrimaryColumn({ name: 'first_week', type: 'date' }) firstWeek: string;
  @PrimaryColumn({ name: 'product_id', type: 'text' }) productId: string;
  @PrimaryColumn({ name: 'renewal_intent', type: 'text' }) renewalIntent: string;
  @PrimaryColumn({ name: 'grace_day', type: 'date' }) graceDay: string;
  @PrimaryColumn({ name: 'billing_retry', type: 'boolean' }) billingRetry: boolean;
  @Column({ type: 'bigint' }) n: string;
}

/** Exact customers per application and UTC day of first_seen_at, kept by the projection. */
@Entity({ schema: 'read_model', name: 'customer_day_counts' })
export class CustomerDayCountEntity {
  @PrimaryColumn({ name: 'app_id', type: 'text' }) appId: string;
  @PrimaryColumn({ type: 'date' }) day: string;
  @Column({ type: 'bigint' }) n: string;
}

@Entity({ schema: 'read_model', name: 'receipts' })
@Index('receipts_customer_idx', ['appId', 'applicationUsername', 'receiptId'])
export class ReceiptEntity {
  @PrimaryColumn({ name: 'app_id', type: 'text' }) appId: string;
  @PrimaryColumn({ name: 'receipt_id', type: 'text' }) receiptId: string;
  /** null: the winning link named a customer since erased (docs/privacy.md). */
  @Column({ name: 'application_username', type: 'text', nullable: true }) applicationUsername: string | null;
  /** From a receipt.linked (true) or from a transaction's applicationUsername (false). */
  @Column({ type: 'boolean', default: true }) explicit: boolean;
  @Column({ name: 'version_time', type: 'timestamptz' }) versionTime: Date;
  @Column({ name: 'version_id', type: 'text' }) versionId: string;
}

@Entity({ schema: 'read_model', name: 'transactions' })
// (app_id, occurred_at, transaction_id) INCLUDE (platform, sandbox): TypeORM cannot express INCLUDE, so the
// migration owns this index and the schema diff leaves it alone
@Index('transactions_page_idx', { synchronize: false })
@Index('transactions_receipt_idx', ['appId', 'receiptId'])
@Index('transactions_purchase_idx', ['appId', 'purchaseId'])
@Index('transactions_product_idx', ['appId', 'productId', 'occurredAt', 'transactionId'])
@Index('transactions_changes_idx', ['appId', 'changePosition', 'transactionId'])
@Index('transactions_unstamped_idx', ['appId'], { where: 'change_position IS NULL' })
export class TransactionEntity {
  @PrimaryColumn({ name: 'app_id', type: 'text' }) appId: string;
  @PrimaryColumn({ name: 'transaction_id', type: 'text' }) transactionId: string;
  @Column({ name: 'receipt_id', type: 'text' }) receiptId: string;
  @Column({ name: 'purchase_id', type: 'text' }) purchaseId: string;
  @Column({ name: 'product_id', type: 'text' }) productId: string;
  @Column({ type: 'text' }) platform: string;
  @Column({ type: 'boolean', nullable: true }) sandbox: boolean | null;
  @Column({ name: 'purchase_date', type: 'timestamptz', nullable: true }) purchaseDate: Date | null;
  @Column({ name: 'last_renewal_date', type: 'timestamptz', nullable: true }) lastRenewalDate: Date | null;
  @Column({ name: 'renewal_date', type: 'timestamptz', nullable: true }) renewalDate: Date | null;
  @Column({ name: 'expiration_date', type: 'timestamptz', nullable: true }) expirationDate: Date | null;
  @Column({ name: 'renewal_intent', type: 'text', nullable: true }) renewalIntent: string | null;
  @Column({ name: 'renewal_intent_change_date', type: 'timestamptz', nullable: true }) renewalIntentChangeDate: Date | null;
  @Column({ name: 'cancelation_reason', type: 'text', nullable: true }) cancelationReason: string | null;
  @Column({ name: 'is_pending', type: 'boolean', nullable: true }) isPending: boolean | null;
  @Column({ name: 'is_acknowledged', type: 'boolean', nullable: true }) isAcknowledged: boolean | null;
  @Column({ name: 'is_consumed', type: 'boolean', nullable: true }) isConsumed: boolean | null;
  @Column({ name: 'is_billing_retry_period', type: 'boolean', nullable: true }) isBillingRetryPeriod: boolean | null;
  @Column({ name: 'is_trial_period', type: 'boolean', nullable: true }) isTrialPeriod: boolean | null;
  @Column({ name: 'is_intro_period', type: 'boolean', nullable: true }) isIntroPeriod: boolean | null;
  @Column({ name: 'is_expired', type: 'boolean', nullable: true }) isExpired: boolean | null;
  @Column({ name: 'grace_period_expiration_date', type: 'timestamptz', nullable: true }) gracePeriodExpirationDate: Date | null;
  @Column({ name: 'revocation_date', type: 'timestamptz', nullable: true }) revocationDate: Date | null;
  /** The store's kind of revocation (REFUND_FULL, REFUND_PRORATED, FAMILY_REVOKE; docs/revenue.md) and the share refunded, 0 to 1, when the store says. */
  @Column({ name: 'revocation_type', type: 'text', nullable: true }) revocationType: string | null;
  @Column({ name: 'refunded_share', type: 'numeric', nullable: true }) refundedShare: string | null;
  @Column({ name: 'is_upgraded', type: 'boolean', nullable: true }) isUpgraded: boolean | null;
  /** isUpgraded and cancelationReason as the winning snapshot says; the shown ones add replacements (docs/api.md, rule 2). */
  @Column({ name: 'snapshot_is_upgraded', type: 'boolean', nullable: true }) snapshotIsUpgraded: boolean | null;
  @Column({ name: 'snapshot_cancelation_reason', type: 'text', nullable: true }) snapshotCancelationReason: string | null;
  @Column({ name: 'price_consent_status', type: 'text', nullable: true }) priceConsentStatus: string | null;
  @Column({ name: 'discount_id', type: 'text', nullable: true }) discountId: string | null;
  /** The store's offer (docs/events/README.md): INTRODUCTORY, PROMOTIONAL, OFFER_CODE, WIN_BACK; its payment mode and duration. */
  @Column({ name: 'offer_type', type: 'text', nullable: true }) offerType: string | null;
  @Column({ name: 'offer_discount_type', type: 'text', nullable: true }) offerDiscountType: string | null;
  @Column({ name: 'offer_period', type: 'text', nullable: true }) offerPeriod: string | null;
  /** PURCHASED or FAMILY_SHARED (Apple Family Sharing); NULL when the store does not say. */
  @Column({ name: 'ownership_type', type: 'text', nullable: true }) ownershipType: string | null;
  @Column({ type: 'integer', nullable: true }) quantity: number | null;
  @Column({ name: 'amount_usd', type: 'double precision', nullable: true }) amountUsd: number | null;
  @Column({ name: 'amount_micros', type: 'bigint', nullable: true }) amountMicros: string | null;
  @Column({ type: 'text', nullable: true }) currency: string | null;
  /** The transaction date: orders transactions and drives the date filter; see docs/api.md. */
  @Column({ name: 'occurred_at', type: 'timestamptz' }) occurredAt: Date;
  @Column({ name: 'first_event_at', type: 'timestamptz' }) firstEventAt: Date;
  @Column({ name: 'version_time', type: 'timestamptz' }) versionTime: Date;
  @Column({ name: 'version_id', type: 'text' }) versionId: string;
  /** snapshotDigest of the stored snapshot (src/projection/project-events.ts); NULL on rows stored before it was kept. */
  @Column({ name: 'snapshot_digest', type: 'text', nullable: true }) snapshotDigest: string | null;
  /** Provenance (docs/api.md): the event that made the row say what it says, its source and when the log received it. */
  @Column({ name: 'state_event_id', type: 'text', nullable: true }) stateEventId: string | null;
  @Column({ name: 'state_source', type: 'text', nullable: true }) stateSource: string | null;
  @Column({ name: 'state_received_at', type: 'timestamptz', nullable: true }) stateReceivedAt: Date | null;
  @Column({ name: 'change_position', type: 'bigint', nullable: true }) changePosition: string | null;
}

@Entity({ schema: 'read_model', name: 'projection_offsets' })
export class ProjectionOffsetEntity {
  @PrimaryColumn({ type: 'text' }) topic: string;
  @PrimaryColumn({ type: 'integer' }) partition: number;
  @Column({ name: 'next_offset', type: 'bigint' }) nextOffset: string;
  @Column({ name: 'updated_at', type: 'timestamptz', default: () => 'now()' }) updatedAt: Date;
  /** SHA-1 of the message at next_offset - 1: recognises a recreated or rewritten topic. */
  @Column({ name: 'last_message_sha1', type: 'bytea', nullable: true }) lastMessageSha1: Buffer | null;
}

@Entity({ schema: 'public', name: 'event_log' })
export class EventLogEntity {
  @PrimaryColumn({ type: 'text' }) topic: string;
  @PrimaryColumn({ type: 'integer' }) partition: number;
  @PrimaryColumn({ type: 'bigint' }) offset: string;
  @Column({ type: 'text', nullable: true }) key: string | null;
  @Column({ type: 'bytea' }) value: Buffer;
  @Column({ name: 'appended_at', type: 'timestamptz', default: () => 'now()' }) appendedAt: Date;
}

@Entity({ schema: 'public', name: 'event_log_heads' })
export class EventLogHeadEntity {
  @PrimaryColumn({ type: 'text' }) topic: string;
  @PrimaryColumn({ type: 'integer' }) partition: number;
  @Column({ name: 'next_offset', type: 'bigint' }) nextOffset: string;
}

@Entity({ schema: 'public', name: 'dead_letters' })
@Unique('dead_letters_topic_partition_offset_key', ['topic', 'partition', 'offset'])
export class DeadLetterEntity {
  @PrimaryGeneratedColumn({ type: 'bigint' }) id: string;
  @Column({ type: 'text' }) topic: string;
  @Column({ type: 'integer' }) partition: number;
  @Column({ type: 'bigint' }) offset: string;
  /** Bytes as the log held them: a Kafka key may be anything, NUL included. */
  @Column({ type: 'bytea', nullable: true }) key: Buffer | null;
  @Column({ type: 'bytea' }) value: Buffer;
  @Column({ type: 'text' }) code: string;
  @Column({ type: 'text' }) reason: string;
  @Column({ name: 'created_at', type: 'timestamptz', default: () => 'now()' }) createdAt: Date;
}

@Entity({ schema: 'public', name: 'read_model_generation' })
@Check('read_model_generation_singleton_check', 'singleton')
export class ReadModelGenerationEntity {
  @PrimaryColumn({ type: 'boolean', default: true }) singleton: boolean;
  @Column({ type: 'integer' }) generation: number;
  @Column({ name: 'switched_at', type: 'timestamptz', default: () => 'now()' }) switchedAt: Date;
}

@Entity({ schema: 'public', name: 'rebuilds' })
@Check('rebuilds_kind_check', `kind IN ('rebuild', 'verify')`)
@Check('rebuilds_status_check', `status IN ('running', 'switched', 'verified', 'aborted')`)
@Index('rebuilds_one_running_per_schema', ['schemaName'], { unique: true, where: `status = 'running'` })
export class RebuildEntity {
  @PrimaryGeneratedColumn({ type: 'bigint' }) id: string;
  @Column({ type: 'text' }) kind: 'rebuild' | 'verify';
  @Column({ name: 'schema_name', type: 'text' }) schemaName: string;
  @Column({ type: 'text' }) status: 'running' | 'switched' | 'verified' | 'aborted';
  @Column({ name: 'target_offsets', type: 'jsonb' }) targetOffsets: Record<string, string>;
  @Column({ type: 'text' }) owner: string;
  @Column({ name: 'started_at', type: 'timestamptz', default: () => 'now()' }) startedAt: Date;
  @Column({ name: 'finished_at', type: 'timestamptz', nullable: true }) finishedAt: Date | null;
  @Column({ type: 'jsonb', nullable: true }) report: unknown;
  /** High-water mark when the generation was created: live changes from here on are re-checked at the switch. */
  @Column({ name: 'changes_from', type: 'bigint', nullable: true }) changesFrom: string | null;
}

@Entity({ schema: 'public', name: 'webhook_endpoints' })
@Index('webhook_endpoints_app_idx', ['appId'])
export class WebhookEndpointEntity {
  @PrimaryGeneratedColumn({ type: 'bigint' }) id: string;
  @Column({ name: 'app_id', type: 'text' }) appId: string;
  @Column({ type: 'text' }) url: string;
  /** Standard Webhooks secret (whsec_...); the previous one is still signed with until rotated out. */
  @Column({ type: 'text' }) secret: string;
  @Column({ name: 'previous_secret', type: 'text', nullable: true }) previousSecret: string | null;
  @Column({ name: 'previous_secret_until', type: 'timestamptz', nullable: true }) previousSecretUntil: Date | null;
  /** Change-feed cursors: how far this endpoint's deliveries have been queued. */
  @Column({ name: 'customers_cursor', type: 'text' }) customersCursor: string;
  @Column({ name: 'transactions_cursor', type: 'text' }) transactionsCursor: string;
  @Column({ name: 'created_at', type: 'timestamptz', default: () => 'now()' }) createdAt: Date;
  @Column({ name: 'failing_since', type: 'timestamptz', nullable: true }) failingSince: Date | null;
  @Column({ name: 'disabled_at', type: 'timestamptz', nullable: true }) disabledAt: Date | null;
  @Column({ name: 'disabled_reason', type: 'text', nullable: true }) disabledReason: string | null;
}

@Entity({ schema: 'public', name: 'webhook_deliveries' })
@Check('webhook_deliveries_event_type_check', `event_type IN ('customer.updated', 'transaction.updated')`)
@Check('webhook_deliveries_status_check', `status IN ('pending', 'delivered', 'failed')`)
@Index('webhook_deliveries_due_idx', ['nextAttemptAt', 'id'], { where: `status = 'pending'` })
@Index('webhook_deliveries_order_idx', ['endpointId', 'orderKey', 'id'], { where: `status = 'pending'` })
@Index('webhook_deliveries_row_idx', ['endpointId', 'rowKey', 'id'], { where: `status = 'pending'` })
@Index('webhook_deliveries_endpoint_idx', ['endpointId', 'id'])
export class WebhookDeliveryEntity {
  @PrimaryGeneratedColumn({ type: 'bigint' }) id: string;
  @ManyToOne(() => WebhookEndpointEntity, { onDelete: 'CASCADE', nullable: false })
  @JoinColumn({ name: 'endpoint_id', foreignKeyConstraintName: 'webhook_deliveries_endpoint_id_fkey' })
  endpoint: WebhookEndpointEntity;
  @Column({ name: 'endpoint_id', type: 'bigint' }) endpointId: string;
  @Column({ name: 'event_type', type: 'text' }) eventType: 'customer.updated' | 'transaction.updated';
  /** Deliveries with the same key (one customer) are sent one at a time, in id order. */
  @Column({ name: 'order_key', type: 'text' }) orderKey: string;
  /** The row the delivery carries (transaction:<id>, customer:<username>): a row's deliveries are sent one at a time, in id order, too. */
  @Column({ name: 'row_key', type: 'text', nullable: true }) rowKey: string | null;
  /** The exact body sent (and signed): text, so key order survives. */
  @Column({ type: 'text' }) payload: string;
  @Column({ type: 'text', default: 'pending' }) status: 'pending' | 'delivered' | 'failed';
  @Column({ type: 'integer', default: 0 }) attempts: number;
  @Column({ name: 'created_at', type: 'timestamptz', default: () => 'now()' }) createdAt: Date;
  @Column({ name: 'next_attempt_at', type: 'timestamptz', default: () => 'now()' }) nextAttemptAt: Date;
  @Column({ name: 'lease_until', type: 'timestamptz', nullable: true }) leaseUntil: Date | null;
  @Column({ name: 'last_attempt_at', type: 'timestamptz', nullable: true }) lastAttemptAt: Date | null;
  @Column({ name: 'last_status', type: 'integer', nullable: true }) lastStatus: number | null;
  @Column({ name: 'last_error', type: 'text', nullable: true }) lastError: string | null;
  @Column({ name: 'delivered_at', type: 'timestamptz', nullable: true }) deliveredAt: Date | null;
  /** The `webhook-id` header: random, so ids never repeat after the database is recreated or restored. Written as TypeORM reads it back (casts stripped). */
  @Column({ name: 'message_id', type: 'text', default: () => "('msg_'|| replace((gen_random_uuid()), '-', ''))" }) messageId: string;
}

export const ENTITIES = [
  WebhookEndpointEntity,
  WebhookDeliveryEntity,
  TransactionDayCountEntity,
  TransactionFilterDayCountEntity,
  CustomerEndWeekEntity,
  CustomerDayCountEntity,
  ReadModelGenerationEntity,
  RebuildEntity,
  CustomerEntity,
  ReceiptEntity,
  TransactionEntity,
  ProjectionOffsetEntity,
  EventLogEntity,
  EventLogHeadEntity,
  DeadLetterEntity,
];
