import { Inject, Logger } from '@nestjs/common';
import { Command, CommandHandler, ICommandHandler, QueryBus } from '@nestjs/cqrs';
import { InjectDataSource } from '@nestjs/typeorm';
import { setTimeout as sleep } from 'node:timers/promises';
import type { DataSource } from 'typeorm';
import type { Principal } from '../../auth/scopes.js';
import { USERNAME_CLAIM } from '../../auth/scopes.js';
import { Clock } from '../../common/clock.js';
import { ErrorCode, InvalidParameterError } from '../../common/errors.js';
import { MAX_LIMIT } from '../../common/paging.js';
import { APP_CONFIG, type AppConfig } from '../../config/app-config.js';
import { rememberAccountToken, resolveAccountTokens } from '../../customers/account-tokens/account-tokens.js';
import type { CustomerSummary } from '../../customers/customer.schema.js';
import { ListCustomersQuery } from '../../customers/list-customers/list-customers.query.js';
import type { ContractEvent } from '../../store-notifications/apple/apple-to-events.js';
import { NotificationPublisher } from '../../store-notifications/notification-publisher.js';
import { StoreNotificationError } from '../../store-notifications/store-notification.errors.js';
import type { TransactionView } from '../../transactions/transaction.schema.js';
import { ListTransactionsQuery } from '../../transactions/list-transactions/list-transactions.query.js';
import { PurchaseError } from '../purchase.errors.js';
import type { PurchaseRequest } from './purchase-body.js';
import { PurchaseSources } from './purchase-events.js';
import { planPurchase, type StoredOwner } from './purchase-plan.js';
import { recordPurchaseSql } from './record-purchase.sql.js';

export type RecordedPurchase =
  | { status: 'recorded'; customer: CustomerSummary; transactions: TransactionView[]; appAccountToken: string }
  | { status: 'pending'; applicationUsername: string; location: string; appAccountToken: string };

export class RecordPurchaseCommand extends Command<RecordedPurchase> {
  constructor(
    readonly principal: Principal,
    readonly request: PurchaseRequest,
  ) {
    super();
  }
}

/**
 * How often the wait for the projection looks again: every 20 ms while a batch of a few purchases
 * takes tens of milliseconds to project (docs/benchmarks-purchases.md; a backoff from the start
 * measured worse, adding its own steps to the answer), then less and less often, up to 250 ms, so
 * requests waiting on a consumer that is behind do not load the database it writes to.
 */
const POLL_MS = 20;
const POLL_STEADY_FOR_MS = 250;
const POLL_MAX_MS = 250;

/**
 * POST /v2/purchases (docs/purchases.md): the purchase's events from its store, who it belongs to
 * decided by the app's rule, the events into the log like any producer's, the account token
 * remembered (and set at Apple), then the answer once the read models show it.
 */
@CommandHandler(RecordPurchaseCommand)
export class RecordPurchaseHandler implements ICommandHandler<RecordPurchaseCommand> {
  private readonly logger = new Logger('purchases');
  private readonly sources: PurchaseSources;

  constructor(
    @Inject(APP_CONFIG) private readonly config: AppConfig,
    @InjectDataSource() private readonly db: DataSource,
    private readonly publisher: NotificationPublisher,
    private readonly queryBus: QueryBus,
    private readonly clock: Clock,
  ) {
    this.sources = new PurchaseSources(config, () => clock.now());
  }

  async execute({ principal, request }: RecordPurchaseCommand): Promise<RecordedPurchase> {
    const appId = principal.appId;
    const username = whoFor(principal, request.applicationUsername);
    // A transaction id is no secret, and Apple's ReceiptUtility reads an app receipt without checking its signature: from an app
    // (a token bound to one user, which its user can take out of the app) neither proves a purchase.
    if (principal.username !== undefined && ('transactionId' in request.source || 'appReceipt' in request.source))
      throw new PurchaseError(
        ErrorCode.UsernameNotAllowed,
        `a token bound to one user may not send a bare ${'transactionId' in request.source ? 'transactionId' : 'appReceipt'}: it proves no purchase. Send the signedTransaction (StoreKit 2), or send it from your backend with its own token`,
      );
    const events = await this.sources.events(appId, request.source);
    // The store's data names users by the tokens this service gave them: back to their names first.
    const storeTokens = new Map(events.map((e) => [e.data.receiptId, e.data.applicationUsername]));
    await resolveAccountTokens(this.db, events);
    const receipts = [...new Set(events.map((e) => e.data.receiptId))];
    const transactions = events.filter((e) => e.type === 'transaction.updated');
    const [owners, applied] = await Promise.all([this.owners(appId, receipts), this.applied(appId, transactions)]);
    const rule = this.config.purchases.ownership(appId);
    const proof = 'signedTransaction' in request.source || 'purchaseToken' in request.source;
    const plan = planPurchase({ appId, username, rule, proof, events, owners, applied, now: this.clock.now() });
    if (plan.kind === 'conflict')
      throw new PurchaseError(
        ErrorCode.ReceiptOwnedByAnotherUser,
        plan.reason === 'keep'
          ? `receipt ${plan.receiptId} belongs to another user of application ${appId}, and its rule is "keep" (PURCHASE_OWNERSHIP): the first owner keeps a purchase`
          : `receipt ${plan.receiptId} belongs to another user of application ${appId}; a transactionId or appReceipt proves no purchase, so it moves none: send the signedTransaction (StoreKit 2)`,
      );
    if (plan.events.length > 0) await this.publish(plan.events);
    const appAccountToken = await rememberAccountToken(this.db, appId, username);
    // Apple is told while the projection runs: the answer waits for the longer of the two, not their sum.
    const told = request.source.platform === 'apple' && plan.links.length > 0 ? this.tellApple(appId, plan.links, storeTokens, appAccountToken) : undefined;
    const purchaseIds = [...new Set(transactions.map((e) => String(e.data.purchaseId)))];
    const [shown] = await Promise.all([this.waitUntilShown(appId, username, plan.events, receipts), told]);
    if (!shown) {
      return {
        status: 'pending',
        applicationUsername: username,
        location: `/v2/customers?applicationUsername=${encodeURIComponent(username)}`,
        appAccountToken,
      };
    }
    return { status: 'recorded', customer: shown, transactions: await this.transactionsOf(appId, purchaseIds), appAccountToken };
  }

  private async publish(events: ContractEvent[]): Promise<void> {
    try {
      await this.publisher.publish(events);
    } catch (error) {
      if (error instanceof StoreNotificationError && error.code === ErrorCode.EventLogUnavailable)
        throw new PurchaseError(ErrorCode.EventLogUnavailable, 'the event log cannot take the purchase now; retry', { cause: error });
      if (error instanceof StoreNotificationError) throw new PurchaseError(ErrorCode.PurchaseUnverified, error.message, { cause: error });
      throw error;
    }
  }

  private async owners(appId: string, receipts: readonly string[]): Promise<Map<string, StoredOwner>> {
    const rows = (await this.db.query(recordPurchaseSql.owners, [appId, receipts])) as {
      receipt_id: string;
      application_username: string | null;
      ms: number;
      version_id: string;
    }[];
    return new Map(rows.map((r) => [r.receipt_id, { applicationUsername: r.application_username, versionMs: r.ms, versionId: r.version_id }]));
  }

  private async applied(appId: string, events: readonly ContractEvent[]): Promise<Set<string>> {
    if (events.length === 0) return new Set();
    const rows = (await this.db.query(recordPurchaseSql.applied, [
      appId,
      events.map((e) => e.data.transactionId),
      events.map((e) => e.time),
      events.map((e) => e.id),
    ])) as { id: string }[];
    return new Set(rows.map((r) => r.id));
  }

  /**
   * Set App Account Token (App Store Server API 1.16) on each subscription or purchase that moved to
   * the user, so Apple's later notifications carry the user's token. Best effort: the link is in the
   * log whatever Apple answers, and a failure is logged.
   */
  private async tellApple(appId: string, links: readonly ContractEvent[], storeTokens: ReadonlyMap<string, unknown>, token: string): Promise<void> {
    const client = this.sources.appleClient(appId);
    if (!client) return;
    for (const link of links) {
      if (storeTokens.get(link.data.receiptId) === token) continue;
      const original = link.data.receiptId.replace(/^apple:/, '');
      try {
        await client.setAppAccountToken(original, { appAccountToken: token });
      } catch (error) {
        this.logger.warn(`Set App Account Token for ${link.data.receiptId} of application ${appId} failed: ${(error as Error).message}`);
      }
    }
  }

  /**
   * Until PURCHASE_WAIT runs out: the primary holds every published event at its version or newer,
   * and the read path (a replica, when configured) shows the user owning every receipt.
   */
  private async waitUntilShown(
    appId: string,
    username: string,
    published: readonly ContractEvent[],
    receipts: readonly string[],
  ): Promise<CustomerSummary | undefined> {
    const started = Date.now();
    const deadline = started + this.config.purchases.waitMs;
    let pause = POLL_MS;
    const transactions = published.filter((e) => e.type === 'transaction.updated');
    const links = published.filter((e) => e.type === 'receipt.linked');
    for (;;) {
      const [applied, owners] = await Promise.all([
        this.applied(appId, transactions),
        this.owners(
          appId,
          links.map((l) => l.data.receiptId),
        ),
      ]);
      const linked = links.every((l) => {
        const owner = owners.get(l.data.receiptId);
        return owner !== undefined && owner.applicationUsername === username && owner.versionMs >= Date.parse(String(l.time));
      });
      if (applied.size === transactions.length && linked) {
        const page = await this.queryBus.execute(new ListCustomersQuery(appId, 0, 1, [username]));
        const customer = page.rows[0];
        if (customer && receipts.every((r) => customer.receiptIds.includes(r))) return customer;
      }
      const left = deadline - Date.now();
      if (left <= 0) return undefined;
      await sleep(Math.min(pause, left));
      if (Date.now() - started > POLL_STEADY_FOR_MS) pause = Math.min(POLL_MAX_MS, Math.round(pause * 1.5));
    }
  }

  private async transactionsOf(appId: string, purchaseIds: readonly string[]): Promise<TransactionView[]> {
    const pages = await Promise.all(
      purchaseIds.map((purchaseId) => this.queryBus.execute(new ListTransactionsQuery(appId, 0, MAX_LIMIT, undefined, undefined, { purchaseId }))),
    );
    return pages.flatMap((p) => p.rows);
  }
}

/** The user a purchase is recorded for: the token's own, or the one the body names (a backend's token). */
function whoFor(principal: Principal, named: string | undefined): string {
  if (principal.username !== undefined) {
    if (named !== undefined && named !== principal.username)
      throw new PurchaseError(
        ErrorCode.UsernameNotAllowed,
        `this token is bound to one user (its "${USERNAME_CLAIM}" claim) and may record purchases for that user only, not for the applicationUsername the body names`,
      );
    return principal.username;
  }
  if (named === undefined) throw new InvalidParameterError('applicationUsername', "applicationUsername is required: the token is the app's, bound to no user");
  return named;
}
