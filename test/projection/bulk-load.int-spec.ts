import { jest } from '@jest/globals';
import { appendToEventLog, readEventLog } from '../../src/event-log/event-log.js';
import { applyBatch } from '../../src/projection/apply-batch.js';
import { createTestDatabase, type TestDatabase } from '../utils/database.js';
import { runCli } from '../utils/processes.js';
import { snapshotReadModels } from '../utils/read-models.js';

jest.setTimeout(120_000);

// The bulk path stages events with COPY's text format: values holding its special characters (tab,
// newline, carriage return, backslash, "\N") or any Unicode must arrive as the live path stores them
// (identifiers allow tabs and backslashes; usernames and renewal intents anything).
describe('rebuild bulk path (integration: CLI, real PostgreSQL, embedded log)', () => {
  let db: TestDatabase;
  const topic = 'bulk-events';

  beforeAll(async () => {
    db = await createTestDatabase('bulk');
  });
  afterAll(async () => {
    await db?.drop();
  });

  it('stores odd characters exactly as the live projection does, and switches to an equal generation', async () => {
    const odd = ['tab\there', 'new\nline', 'back\\slash', '\\N', 'cr\rlf', 'ünï €😀', 'quote"\'', 'comma,semi;'];
    const events = odd.flatMap((text, i) => [
      {
        specversion: '1.0',
        id: `odd-${i}\t\\`,
        source: 'test',
        type: 'transaction.updated',
        time: `2026-05-0${1 + (i % 9)}T10:00:00.123456Z`,
        appid: `app-${i % 2}`,
        data: {
          transactionId: `apple:t-${i}\t\\`,
          receiptId: `apple:r-${i}\\N`,
          purchaseId: `apple:p-${i}`,
          productId: `apple:pro\t${i}`,
          platform: 'apple',
          applicationUsername: `user ${text}`,
          purchaseDate: '2026-05-01T10:00:00Z',
          expirationDate: '2026-06-01T10:00:00Z',
          renewalIntent: text,
          currency: 'EUR',
          amountMicros: 4_990_000 + i,
          amountUSD: 5.25,
        },
      },
      {
        specversion: '1.0',
        id: `link-${i}`,
        source: 'test',
        type: 'receipt.linked',
        time: '2026-05-20T00:00:00Z',
        appid: `app-${i % 2}`,
        data: { receiptId: `apple:r-${i}\\N`, applicationUsername: `owner ${text}` },
      },
    ]);
    await appendToEventLog(
      db.dataSource,
      topic,
      events.map((e) => ({ key: null, value: Buffer.from(JSON.stringify(e)) })),
    );
    const outcome = await applyBatch(db.dataSource, { topic, partition: 0, messages: await readEventLog(db.dataSource, topic, 0, '0', 1000) });
    expect(outcome).toMatchObject({ kind: 'applied', deadLetters: [] });
    const live = await snapshotReadModels(db.dataSource);
    expect(live.transactions.map((t) => t.renewal_intent).sort()).toEqual([...odd].sort());

    const env = { DATABASE_URL: db.url, KAFKA_TOPIC: topic, LOG_LEVEL: 'error' };
    const verify = await runCli(['rebuild', '--verify'], env);
    expect({ code: verify.code, out: verify.stdout }).toMatchObject({ code: 0, out: expect.stringMatching(/equal a fresh projection/) });
    const rebuild = await runCli(['rebuild'], env);
    expect(rebuild.code).toBe(0);
    expect(await snapshotReadModels(db.dataSource)).toEqual(live);
  });

  it('provenance: given snapshots in log order, the live batches and the bulk fold name the event that made each state', async () => {
    const own = await createTestDatabase('bulk_provenance');
    try {
      await expectProvenanceFolded(own);
    } finally {
      await own.drop();
    }
  });
});

/** Snapshots in a chosen log order, applied live in small batches and folded by a rebuild: provenance must agree. */
async function expectProvenanceFolded(db: TestDatabase): Promise<void> {
  const provenanceTopic = 'provenance-events';
  const snapshot = (transaction: string, id: string, day: number, intent: string, source = 'producer-a') => ({
    specversion: '1.0',
    id,
    source,
    type: 'transaction.updated',
    time: `2026-07-0${day}T00:00:00Z`,
    appid: 'app-p',
    data: {
      transactionId: `apple:${transaction}`,
      receiptId: `apple:r-${transaction}`,
      purchaseId: `apple:${transaction}`,
      productId: 'apple:pro',
      platform: 'apple',
      purchaseDate: '2026-07-01T00:00:00Z',
      expirationDate: '2026-08-01T00:00:00Z',
      renewalIntent: intent,
    },
  });
  const log = [
    // went and came back, in time order: the last coming
    snapshot('went-back', 'wb-1', 1, 'Renew'),
    snapshot('went-back', 'wb-2', 2, 'Lapse'),
    snapshot('went-back', 'wb-3', 3, 'Renew'),
    // the coming back arrived first: the change it undid lost when it came, so the first saying stays
    snapshot('early', 'e-1', 1, 'Renew'),
    snapshot('early', 'e-3', 3, 'Renew'),
    snapshot('early', 'e-2', 2, 'Lapse'),
    // confirmed later by another path, and delivered twice: the first saying, its first copy
    snapshot('confirmed', 'c-1', 1, 'Renew', 'apple-app-store-server-notifications'),
    snapshot('confirmed', 'c-1', 1, 'Renew', 'apple-app-store-server-notifications'),
    snapshot('confirmed', 'c-2', 2, 'Renew', 'subscription-records-reconciliation'),
    // changed, then said again
    snapshot('changed', 'ch-1', 1, 'Renew'),
    snapshot('changed', 'ch-2', 2, 'Lapse', 'subscription-records-reconciliation'),
    snapshot('changed', 'ch-3', 3, 'Lapse', 'apple-app-store-server-notifications'),
  ];
  // one message per append, a few milliseconds apart: each copy gets its own arrival time (the log's timestamps are in ms)
  for (const e of log) {
    await appendToEventLog(db.dataSource, provenanceTopic, [{ key: null, value: Buffer.from(JSON.stringify(e)) }]);
    await new Promise((resolve) => setTimeout(resolve, 3));
  }
  const messages = await readEventLog(db.dataSource, provenanceTopic, 0, '0', 1000);
  // batches of two and three: some of a transaction's snapshots meet in a batch, some across batches
  for (let i = 0, size = 2; i < messages.length; i += size, size = 5 - size) {
    const outcome = await applyBatch(db.dataSource, { topic: provenanceTopic, partition: 0, messages: messages.slice(i, i + size) });
    expect(outcome).toMatchObject({ kind: 'applied', deadLetters: [] });
  }
  const state = async () =>
    (await db.dataSource.query(
      `SELECT transaction_id, state_event_id, state_source,
              abs(extract(epoch FROM state_received_at - (
                SELECT min(appended_at) FROM public.event_log l WHERE l.topic = $1 AND convert_from(l.value, 'UTF8')::json->>'id' = t.state_event_id))) < 0.001 AS first_copy
       FROM read_model.transactions t WHERE app_id = 'app-p' ORDER BY 1`,
      [provenanceTopic],
    )) as { transaction_id: string; state_event_id: string; state_source: string; first_copy: boolean }[];
  const expected = [
    { transaction_id: 'apple:changed', state_event_id: 'ch-2', state_source: 'subscription-records-reconciliation', first_copy: true },
    { transaction_id: 'apple:confirmed', state_event_id: 'c-1', state_source: 'apple-app-store-server-notifications', first_copy: true },
    { transaction_id: 'apple:early', state_event_id: 'e-1', state_source: 'producer-a', first_copy: true },
    { transaction_id: 'apple:went-back', state_event_id: 'wb-3', state_source: 'producer-a', first_copy: true },
  ];
  expect(await state()).toEqual(expected);
  const live = await snapshotReadModels(db.dataSource);

  const env = { DATABASE_URL: db.url, KAFKA_TOPIC: provenanceTopic, LOG_LEVEL: 'error' };
  const verify = await runCli(['rebuild', '--verify'], env);
  expect({ code: verify.code, out: verify.stdout }).toMatchObject({ code: 0, out: expect.stringMatching(/equal a fresh projection/) });
  expect((await runCli(['rebuild'], env)).code).toBe(0);
  expect(await state()).toEqual(expected);
  expect(await snapshotReadModels(db.dataSource)).toEqual(live);
}
