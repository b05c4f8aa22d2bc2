import type { OnModuleInit } from '@nestjs/common';
import { IQueryHandler, QueryHandler } from '@nestjs/cqrs';
import { InjectDataSource } from '@nestjs/typeorm';
import { DataSource } from 'typeorm';
import { HIGH_WATER } from '../../change-feed/change-positions.sql.js';
import { onPool, readChanges } from '../../change-feed/read-changes.js';
import { cursorSigner, type CursorSigner } from '../../change-feed/signed-cursor.js';
import type { ChangeCursor } from '../../change-feed/change-cursor.js';
import { KEEP_FEED_DELETIONS_MS } from '../../change-feed/feed-retention.js';
import { Clock } from '../../common/clock.js';
import { InvalidParameterError } from '../../common/errors.js';
import type { Page } from '../../common/paging.js';
import { preparedQuery, type Queryable } from '../../database/prepared.js';
import { ReadReplicas } from '../../database/read-replicas.js';
import type { CustomerSummary } from '../customer.schema.js';
import { toSummaries } from '../list-customers/list-customers.handler.js';
import { CUSTOMER_COLUMNS, type CustomerRow } from '../list-customers/list-customers.sql.js';
import { ListCustomerChangesQuery } from './list-customer-changes.query.js';
import { customerTotalSql } from './list-customer-changes.sql.js';

@QueryHandler(ListCustomerChangesQuery)
export class ListCustomerChangesHandler implements IQueryHandler<ListCustomerChangesQuery>, OnModuleInit {
  private cursors!: CursorSigner;

  constructor(
    @InjectDataSource() private readonly db: DataSource,
    private readonly reads: ReadReplicas,
    private readonly clock: Clock,
  ) {}

  // The key is read on the primary; replicas hold the same one (replicated).
  async onModuleInit(): Promise<void> {
    this.cursors = await cursorSigner(this.db);
  }

  async execute(query: ListCustomerChangesQuery): Promise<Page<CustomerSummary>> {
    const after = this.cursors.verify('customers', query.appId, query.after);
    const db = this.reads.pick();
    // Deletion entries are shown only from where the client began (docs/change-feed.md, "Deletions"):
    // starting at 0, that is the high-water mark now, read before the page, so every deletion the
    // client's rows can predate is at or above it. Cursors issued before origins existed see them all.
    const origin = query.after === '0' ? (await preparedQuery<{ mark: string }>(db, 'feed-high-water', `SELECT ${HIGH_WATER}::text AS mark`, []))[0].mark : after.origin;
    // The purge mark is read where the page is: a replica behind a purge still holds the entries.
    if (query.after !== '0') await this.refuseIfPurged(db, after);
    const [[{ total }], page] = await Promise.all([
      preparedQuery<{ total: string }>(db, 'customers-total', customerTotalSql, [query.appId]),
      readChanges<CustomerRow>(onPool(db), 'customers', CUSTOMER_COLUMNS, query.appId, after, query.limit, origin ?? '0'),
    ]);
    const next = this.cursors.issue('customers', query.appId, { ...page.last, origin });
    const now = this.clock.now();
    const rows = page.rows.map((row, i) => (page.deleted[i] ? deletionEntry(page.positions[i].key) : toSummaries([row], now)[0]));
    return { rows, paging: { skip: 0, limit: query.limit, total: Number(total), next } };
  }

  /**
   * A cursor below the highest purged deletion entry could have been shown one (unless its client
   * began after it): the client would keep a row that was deleted. Refused, so it re-reads from 0.
   */
  private async refuseIfPurged(db: Queryable, after: ChangeCursor): Promise<void> {
    const [{ through }] = await preparedQuery<{ through: string }>(db, 'feed-deletions-purged', `SELECT through::text FROM public.feed_deletions_purged`, []);
    const purged = BigInt(through);
    if (purged === 0n || BigInt(after.position) > purged || (after.origin !== undefined && BigInt(after.origin) > purged)) return;
    throw new InvalidParameterError(
      'changedAfter',
      `changedAfter is older than the deletion entries the feed keeps (${KEEP_FEED_DELETIONS_MS / 86_400_000} days): restart from changedAfter=0 and replace your copy (docs/change-feed.md, "Deletions")`,
    );
  }
}

/** A change-feed deletion entry (docs/change-feed.md, "Deletions"): the key the client stores the row under, and the marker. */
export const deletionEntry = (applicationUsername: string): CustomerSummary => ({ applicationUsername, customerInfo: {}, receiptIds: [], deleted: true });
