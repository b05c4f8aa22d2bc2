import { jest } from '@jest/globals';
import fc from 'fast-check';
import { startTestApp, type TestApp } from '../utils/app.js';
import { endingAfterSnapshot, listAll, queuedEverything, transactionElsewhere, type Row } from '../utils/change-feed.js';
import { createTestDatabase, type TestDatabase } from '../utils/database.js';
import { linkEvent, project, txEvent } from '../utils/events.js';
import { startReceiver, type Received } from '../utils/webhook-receiver.js';
import type { WebhookSettings } from '../../src/config/app-config.js';
import { queueChanges } from '../../src/webhooks/queue-changes.js';
import { WebhookSender } from '../../src/webhooks/send-deliveries.js';
import { addEndpoint, removeEndpoint } from '../../src/webhooks/webhook-endpoints.js';

jest.setTimeout(180_000);

/**
 * A receiver that verifies, dedupes on webhook-id and applies each message in arrival order must end
 * with exactly what the listings show, whatever moves between owners happen and whenever it fails.
 * The test drives the dispatcher's two steps itself (queue what the feed shows, send what is due) so
 * that the history, the queueing and the receiver's outages interleave as generated.
 */
type Step =
  | { kind: 'buy'; receipt: number; owner: number | null }
  | { kind: 'link'; receipt: number; user: number }
  | { kind: 'refund'; receipt: number; pick: number }
  | { kind: 'deliver'; rounds: number }
  | { kind: 'down'; requests: number };

const RUNS = Number(process.env.WEBHOOK_ORDER_RUNS ?? 20 * Number(process.env.ABUSE_SCALE ?? 1));

describe('webhook order across owners (e2e: real PostgreSQL, the listings over HTTP, a receiver on loopback)', () => {
  let db: TestDatabase;
  let api: TestApp;
  let hook: Awaited<ReturnType<typeof startReceiver>>;
  /** The current run's receiver side: what it applied, which ids it saw, how many requests it still fails. */
  let run: { secret: string; failNext: number; seen: Set<string>; customers: Map<string, Row>; transactions: Map<string, Row>; forged: number };
  let settings: WebhookSettings;
  let appSeq = 0;

  beforeAll(async () => {
    db = await createTestDatabase('webhook_row_order');
    api = await startTestApp({ databaseUrl: db.url, env: { WEBHOOK_DELIVERY_ENABLED: 'false', WEBHOOK_ALLOW_HOSTS: '127.0.0.1' } });
    // Retries come back after 50-100 ms, 100-200 ms, ...: long enough for a newer delivery to be due first.
    settings = { ...api.config.webhooks, retryBaseMs: 100, maxInFlight: 4, timeoutMs: 5_000, maxAgeMs: 3_600_000 };
    hook = await startReceiver((r: Received) => {
      if (run.failNext > 0) {
        run.failNext--;
        return { status: 503 };
      }
      if (!hook.verify(run.secret, r)) {
        run.forged++;
        return { status: 401 };
      }
      if (run.seen.has(r.id)) return { status: 204 };
      run.seen.add(r.id);
      const data = r.message.data;
      if (r.message.type === 'customer.updated') run.customers.set(data.applicationUsername as string, data);
      else run.transactions.set(data.transactionId as string, data);
      return { status: 204 };
    });
  });
  afterAll(async () => {
    await hook?.close();
    await api?.close();
    await db?.drop();
  });
  /** Transactions of transactionElsewhere still open (a play that failed half-way). */
  const openElsewhere: { end(): Promise<void> }[] = [];
  afterEach(async () => {
    await Promise.all(openElsewhere.splice(0).map((t) => t.end()));
  });

  /**
   * Plays a history for a fresh application and endpoint, then drains; returns the receiver's copy and
   * the listings. `elsewhere`: `count` transactions of another database on the same server take an id
   * before step `beforeStep`, and each queueing round of the drain ends one just after taking its
   * snapshot (what test files running beside this one can do at random, here on purpose).
   */
  async function play(steps: Step[], elsewhere?: { beforeStep: number; count: number }) {
    const app = `order-${appSeq++}`;
    const { id, secret } = await addEndpoint(db.dataSource, settings, { appId: app, url: hook.url });
    run = { secret, failNext: 0, seen: new Set(), customers: new Map(), transactions: new Map(), forged: 0 };
    const sender = new WebhookSender(db.dataSource, settings);
    let queueingDb = db.dataSource;
    const round = async () => {
      await queueChanges(queueingDb, () => new Date());
      const claimed = await sender.sendDue();
      await sender.idle();
      return claimed;
    };
    const receipts: { data: Record<string, unknown> & { transactionId: string } }[][] = [[], [], []];
    let minute = 0;
    const time = () => new Date(Date.UTC(2025, 0, 1, 0, ++minute)).toISOString();
    const user = (n: number) => `${app}-u${n}`;
    const receiptId = (n: number) => `apple:${app}-r${n}`;
    for (const [index, step] of steps.entries()) {
      if (elsewhere?.beforeStep === index) for (let n = 0; n < elsewhere.count; n++) openElsewhere.push(await transactionElsewhere());
      switch (step.kind) {
        case 'buy': {
          const renewals = receipts[step.receipt];
          const n = renewals.length + 1;
          const at = time();
          const data = {
            transactionId: `${receiptId(step.receipt)}-t${n}`,
            receiptId: receiptId(step.receipt),
            purchaseId: `apple:${app}-p${step.receipt}`,
            purchaseDate: '2025-01-01T00:00:00Z',
            lastRenewalDate: at,
            expirationDate: `${2030 + n}-01-01T00:00:00Z`,
            ...(step.owner === null ? {} : { applicationUsername: user(step.owner) }),
          };
          renewals.push({ data });
          await project(db.dataSource, [txEvent({ app, time: at, data })]);
          break;
        }
        case 'link':
          await project(db.dataSource, [linkEvent({ app, time: time(), receiptId: receiptId(step.receipt), user: user(step.user) })]);
          break;
        case 'refund': {
          const renewals = receipts[step.receipt];
          if (renewals.length === 0) break;
          const t = renewals[step.pick % renewals.length];
          const at = time();
          t.data = { ...t.data, isExpired: true, cancelationReason: 'Customer', revocationDate: at };
          await project(db.dataSource, [txEvent({ app, time: at, data: t.data })]);
          break;
        }
        case 'deliver':
          for (let i = 0; i < step.rounds; i++) await round();
          break;
        case 'down':
          run.failNext += step.requests;
          break;
      }
    }
    run.failNext = 0;
    if (elsewhere) queueingDb = endingAfterSnapshot(db.dataSource, async () => openElsewhere.shift()?.end());
    const deadline = Date.now() + 20_000;
    let roundsBehind = 0;
    for (;;) {
      const claimed = await round();
      const queued = await queuedEverything(db.dataSource, app, id);
      if (!queued) roundsBehind++;
      const [{ pending }] = await db.dataSource.query(
        `SELECT count(*)::int AS pending FROM public.webhook_deliveries WHERE endpoint_id = $1 AND status = 'pending'`,
        [id],
      );
      if (pending === 0 && queued) break;
      if (Date.now() > deadline) throw new Error(`${pending} deliveries still pending (every change queued: ${queued}) after 20 s`);
      if (claimed === 0) await new Promise((r) => setTimeout(r, 5));
    }
    await sender.close();
    await removeEndpoint(db.dataSource, id);
    const token = api.token(app);
    const plain = (rows: Map<string, Row>) => Object.fromEntries([...rows].sort(([a], [b]) => (a < b ? -1 : 1)));
    return {
      roundsBehind,
      received: { customers: plain(run.customers), transactions: plain(run.transactions), forged: run.forged },
      listed: { customers: plain(await listAll(api, token, 'customers')), transactions: plain(await listAll(api, token, 'transactions')), forged: 0 },
    };
  }

  it('a refund queued under the new owner waits for the state queued under the previous one', async () => {
    const { received, listed } = await play([
      { kind: 'link', receipt: 0, user: 0 },
      { kind: 'buy', receipt: 0, owner: null },
      { kind: 'down', requests: 2 },
      { kind: 'deliver', rounds: 1 }, // u0's summary fails; its transaction waits behind it
      { kind: 'link', receipt: 0, user: 1 },
      { kind: 'refund', receipt: 0, pick: 0 },
      { kind: 'deliver', rounds: 1 }, // the refund, under u1, must not go before the purchase
    ]);
    expect(received).toEqual(listed);
    expect(Object.values(listed.transactions)[0]).toMatchObject({ revocationDate: expect.any(String) });
  });

  /** fast-check seed -1977669365, path "1": failed once on CI against PostgreSQL 15 and passed on reruns (issue 39). */
  const SEED_1977669365: Step[] = [
    { kind: 'link', receipt: 1, user: 2 },
    { kind: 'link', receipt: 1, user: 0 },
    { kind: 'link', receipt: 0, user: 0 },
    { kind: 'deliver', rounds: 4 },
    { kind: 'buy', receipt: 1, owner: 2 },
    { kind: 'link', receipt: 0, user: 2 },
    { kind: 'refund', receipt: 1, pick: 1 },
    { kind: 'buy', receipt: 0, owner: 1 },
  ];

  it('seed -1977669365: receipts moving between three customers, a refund, then a purchase moving one again', async () => {
    const { received, listed } = await play(SEED_1977669365);
    expect(received).toEqual(listed);
    expect(Object.keys(listed.customers)).toContain(`order-${appSeq - 1}-u1`);
  });

  it('seed -1977669365 with the feed mark held back in each drain round: the drain ends only once every change was queued', async () => {
    // What the CI failure needed: transactions of other test files' databases, older than the last
    // purchase, ending while a queueing round took its snapshot. That round's mark stays below the
    // purchase, although a look at the mark just before the round found every change below it.
    // Eight: more drain rounds than sending what was queued before the purchase takes (a customer's
    // deliveries go one per round), so the round that finds nothing pending is one of them.
    const { received, listed, roundsBehind } = await play(SEED_1977669365, { beforeStep: SEED_1977669365.length - 1, count: 8 });
    expect(roundsBehind).toBeGreaterThan(0); // the mark was held back: some round did not reach the purchase
    expect(received).toEqual(listed);
  });

  it('on generated histories (moves between owners, refunds, renewals, outages) the receiver ends equal to both listings', async () => {
    // Few receipts and users, so that moves, refunds and outages meet the same rows often.
    const step: fc.Arbitrary<Step> = fc.oneof(
      { weight: 3, arbitrary: fc.record({ kind: fc.constant('buy' as const), receipt: fc.nat(1), owner: fc.option(fc.nat(2), { nil: null }) }) },
      { weight: 3, arbitrary: fc.record({ kind: fc.constant('link' as const), receipt: fc.nat(1), user: fc.nat(2) }) },
      { weight: 3, arbitrary: fc.record({ kind: fc.constant('refund' as const), receipt: fc.nat(1), pick: fc.nat(3) }) },
      { weight: 4, arbitrary: fc.record({ kind: fc.constant('deliver' as const), rounds: fc.integer({ min: 1, max: 5 }) }) },
      { weight: 3, arbitrary: fc.record({ kind: fc.constant('down' as const), requests: fc.integer({ min: 1, max: 4 }) }) },
    );
    await fc.assert(
      fc.asyncProperty(fc.array(step, { minLength: 8, maxLength: 40 }), async (steps) => {
        const { received, listed } = await play(steps);
        expect(received).toEqual(listed);
      }),
      // WEBHOOK_ORDER_SEED with WEBHOOK_ORDER_PATH replays one reported failure (fast-check prints both).
      {
        numRuns: process.env.WEBHOOK_ORDER_PATH ? 1 : RUNS,
        seed: process.env.WEBHOOK_ORDER_SEED ? Number(process.env.WEBHOOK_ORDER_SEED) : undefined,
        path: process.env.WEBHOOK_ORDER_PATH,
      },
    );
  });
});
