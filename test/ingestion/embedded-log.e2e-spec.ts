import { appendToEventLog } from '../../src/event-log/event-log.js';
import { followFeed } from '../utils/change-feed.js';
import { startTestApp, type TestApp } from '../utils/app.js';
import { createTestDatabase, type TestDatabase } from '../utils/database.js';
import { expectEventually } from '../utils/expect-eventually.js';
import { txEvent } from '../utils/events.js';
import { runCli, writeTempFile } from '../utils/processes.js';
import { arrivalsApart, projectFromScratch, snapshotReadModels } from '../utils/read-models.js';
import { scenarioEvents, toBuffers, toNdjson } from '../utils/scenario.js';

const TOPIC = 'purchase-events';

describe('ingestion from the embedded event log (e2e: CLI -> log table -> consumer -> HTTP)', () => {
  let db: TestDatabase;
  let reference: TestDatabase;
  let api: TestApp;

  beforeAll(async () => {
    [db, reference] = await Promise.all([createTestDatabase('elog'), createTestDatabase('elog_ref')]);
    api = await startTestApp({ databaseUrl: db.url, env: { CONSUMER_ENABLED: 'true', PROJECTION_BATCH_SIZE: '50' } });
  });
  afterAll(async () => {
    await api?.close();
    await Promise.all([db?.drop(), reference?.drop()]);
  });

  const caughtUp = async () => {
    const [{ end }] = await db.dataSource.query(`SELECT coalesce(max(next_offset), 0)::text AS end FROM public.event_log_heads WHERE topic = $1`, [TOPIC]);
    await expectEventually(async () => {
      const [row] = await db.dataSource.query(`SELECT next_offset::text AS n FROM read_model.projection_offsets WHERE topic = $1`, [TOPIC]);
      expect(row?.n).toBe(end);
    });
  };

  it('publishes examples/events.ndjson with the CLI and serves the projected rows over HTTP', async () => {
    const published = await runCli(['publish', 'examples/events.ndjson'], { DATABASE_URL: db.url });
    expect(published.stderr).toContain('published 18 event(s) to embedded event log');
    expect(published.code).toBe(0);
    await expectEventually(async () => {
      const res = await api.get('/v2/customers', api.token('demo-app'));
      expect(res.body.rows.map((r: { applicationUsername: string }) => r.applicationUsername)).toEqual([
        'alice',
        'hank',
        'bob',
        'carol',
        'dave',
        'greta',
        'erin',
        'frank',
        'ivy',
      ]);
    });
    const erin = (await api.get('/v2/customers?applicationUsername=erin,frank', api.token('demo-app'))).body.rows;
    expect(erin[0]).toEqual({ applicationUsername: 'erin', customerInfo: {}, receiptIds: [] });
    expect(erin[1].receiptIds).toEqual(['apple:r-shared']);
    const tx = await api.get('/v2/transactions', api.token('demo-app'));
    expect(tx.body.paging.total).toBe(11);
    // what the README shows: bob's renewal charged on 09-08 is in September
    const september = await api.get('/v2/transactions?startdate=2026-09-01T00:00:00Z&enddate=2026-10-01T00:00:00Z', api.token('demo-app'));
    expect(september.body.rows.map((r: { transactionId: string }) => r.transactionId)).toEqual(['google:GPA.1111-2']);
    const named = (await api.get('/v2/customers?applicationUsername=carol,greta,hank,ivy', api.token('demo-app'))).body.rows;
    const info = Object.fromEntries(
      named.map((r: { applicationUsername: string; customerInfo: Record<string, unknown> }) => [r.applicationUsername, r.customerInfo]),
    );
    // carol's refund ends her access at the revocation, though Apple kept the expiration (11-03)
    expect(info.carol).toMatchObject({ expirationDate: '2026-10-10T08:14:00.000Z', activeSubscriber: false, renewalIntent: 'Lapse' });
    // greta is in billing retry: access until the grace end
    expect(info.greta).toMatchObject({ expirationDate: '2026-12-06T07:00:00.000Z' });
    // hank upgraded from monthly to yearly: the yearly is current
    expect(info.hank).toMatchObject({ expirationDate: '2027-07-15T12:00:00.000Z', renewalIntent: 'Renew' });
    expect(info.ivy).toEqual({ activeSubscriber: false });
    const other = await api.get('/v2/customers', api.token('other-app'));
    expect(other.body.rows.map((r: { applicationUsername: string }) => r.applicationUsername)).toEqual(['alice']);
  });

  it('refuses invalid lines by line number, sends the rest, exits non-zero', async () => {
    const good = JSON.stringify(txEvent({ app: 'cli-app', time: '2024-01-01T00:00:00Z', data: { transactionId: 'apple:cli-1' } }));
    const file = writeTempFile('mixed.ndjson', `${good}\n{oops\n\n${JSON.stringify({ type: 'x' })}\n`);
    const result = await runCli(['publish', file], { DATABASE_URL: db.url });
    expect(result.code).not.toBe(0);
    expect(result.stderr).toMatch(/line 2: refused \(not_json\)/);
    expect(result.stderr).toMatch(/line 4: refused \(unknown_type\)/);
    expect(result.stderr).toContain('published 1 event(s)');
    await expectEventually(async () => expect((await api.get('/v2/transactions', api.token('cli-app'))).body.paging.total).toBe(1));
  });

  it('reads events from stdin with -', async () => {
    const line = JSON.stringify(txEvent({ app: 'stdin-app', time: '2024-01-01T00:00:00Z', data: { transactionId: 'apple:stdin-1' } }));
    const result = await runCli(['publish', '-'], { DATABASE_URL: db.url }, line + '\n');
    expect(result.code).toBe(0);
    await expectEventually(async () => expect((await api.get('/v2/transactions', api.token('stdin-app'))).body.paging.total).toBe(1));
  });

  it('projects a large mixed stream to exactly the from-scratch read models, dead-lettering a poison message on the way', async () => {
    const events = toBuffers(scenarioEvents({ seed: 11, customers: 150 }));
    const half = Math.floor(events.length / 2);
    const sync = followFeed(api, ['app-1', 'app-2']);
    await runCli(['publish', writeTempFile('a.ndjson', toNdjson(events.slice(0, half).map((b) => JSON.parse(b.toString()))))], { DATABASE_URL: db.url });
    await appendToEventLog(db.dataSource, TOPIC, [{ key: null, value: Buffer.from('poison: not json') }]);
    await runCli(['publish', writeTempFile('b.ndjson', toNdjson(events.slice(half).map((b) => JSON.parse(b.toString()))))], { DATABASE_URL: db.url });
    await caughtUp();

    const [dead] = await db.dataSource.query(`SELECT code, value FROM public.dead_letters WHERE topic = $1`, [TOPIC]);
    expect(dead).toMatchObject({ code: 'not_json', value: Buffer.from('poison: not json') });

    // reference: everything the log holds, projected in one go
    const log: { value: Buffer }[] = await db.dataSource.query(`SELECT value FROM public.event_log WHERE topic = $1 ORDER BY "offset"`, [TOPIC]);
    await projectFromScratch(
      reference.dataSource,
      log.map((r) => r.value),
    );
    // when the log received each event is the log's own fact: the reference, given the values alone, has none
    expect(arrivalsApart(await snapshotReadModels(db.dataSource))).toEqual(arrivalsApart(await snapshotReadModels(reference.dataSource)));
    await sync.expectListedRows(); // a change-feed client polling during the ingest missed nothing
  });
});
