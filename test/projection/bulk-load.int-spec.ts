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
});
