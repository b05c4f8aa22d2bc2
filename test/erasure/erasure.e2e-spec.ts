import { jest } from '@jest/globals';
import { appendToEventLog } from '../../src/event-log/event-log.js';
import { queueChanges } from '../../src/webhooks/queue-changes.js';
import { addEndpoint } from '../../src/webhooks/webhook-endpoints.js';
import { startTestApp, type TestApp } from '../utils/app.js';
import { createTestDatabase, type TestDatabase } from '../utils/database.js';
import { embeddedLogCaughtUp, linkEvent, txEvent } from '../utils/events.js';
import { expectEventually } from '../utils/expect-eventually.js';
import { createTopic, kafkaBrokers, produce, uniqueTopic, waitUntilCaughtUp } from '../utils/kafka.js';
import { runCli, writeTempFile } from '../utils/processes.js';

jest.setTimeout(180_000);

// Forgetting customers end to end (docs/privacy.md), embedded log: the HTTP route and the CLI, then
// what every surface still holds of the names, then rebuild and rebuild --verify.

const APP = 'erase-app';
// No LIKE wildcards (_ %) in the names: the checks below search for them with LIKE.
const ALICE = 'alice.erase@example.com';
const BOB = 'bob.erase@example.com';
const CAROL = 'carol.erase@example.com';
const DAVE = 'dave.keep@example.com';
const ERASED = [ALICE, BOB, CAROL];

const month = (m: number) => `2026-${String(m).padStart(2, '0')}-01T00:00:00Z`;
const events = [
  // alice: a subscription with two renewals, a receipt moved from dave to her.
  txEvent({
    app: APP,
    time: month(1),
    data: {
      transactionId: 'apple:a-1',
      receiptId: 'apple:r-a',
      purchaseId: 'apple:p-a',
      applicationUsername: ALICE,
      purchaseDate: month(1),
      expirationDate: month(2),
    },
  }),
  txEvent({
    app: APP,
    time: month(2),
    data: {
      transactionId: 'apple:a-2',
      receiptId: 'apple:r-a',
      purchaseId: 'apple:p-a',
      applicationUsername: ALICE,
      purchaseDate: month(1),
      lastRenewalDate: month(2),
      expirationDate: month(3),
    },
  }),
  txEvent({
    app: APP,
    time: month(3),
    data: {
      transactionId: 'apple:a-3',
      receiptId: 'apple:r-a',
      purchaseId: 'apple:p-a',
      applicationUsername: ALICE,
      purchaseDate: month(1),
      lastRenewalDate: month(3),
      expirationDate: month(4),
    },
  }),
  txEvent({ app: APP, time: month(1), data: { transactionId: 'apple:d-1', receiptId: 'apple:r-moved', applicationUsername: DAVE, expirationDate: month(2) } }),
  linkEvent({ app: APP, time: '2026-01-15T00:00:00Z', receiptId: 'apple:r-moved', user: ALICE }),
  // dave keeps his own receipt.
  txEvent({ app: APP, time: month(1), data: { transactionId: 'apple:d-2', receiptId: 'apple:r-d', applicationUsername: DAVE, expirationDate: month(2) } }),
  txEvent({ app: APP, time: month(1), data: { transactionId: 'apple:b-1', receiptId: 'apple:r-b', applicationUsername: BOB } }),
  txEvent({ app: APP, time: month(1), data: { transactionId: 'apple:c-1', receiptId: 'apple:r-c', applicationUsername: CAROL } }),
];
// Dead-lettered (an invalid date) and naming alice.
const poison = { ...txEvent({ app: APP, time: month(1), data: { transactionId: 'apple:x-1', applicationUsername: ALICE, expirationDate: 'not a date' } }) };

describe('forget a customer (e2e: HTTP, CLI, rebuild; real PostgreSQL, embedded log)', () => {
  let db: TestDatabase;
  let api: TestApp;
  const topic = 'erasure-events';
  let env: Record<string, string>;

  beforeAll(async () => {
    db = await createTestDatabase('erasure_e2e');
    env = { DATABASE_URL: db.url, KAFKA_TOPIC: topic, LOG_LEVEL: 'error' };
    api = await startTestApp({
      databaseUrl: db.url,
      env: { KAFKA_TOPIC: topic, CONSUMER_ENABLED: 'true', WEBHOOK_DELIVERY_ENABLED: 'false', WEBHOOK_ALLOW_HOSTS: '127.0.0.1' },
    });
    await addEndpoint(db.dataSource, api.config.webhooks, { appId: APP, url: 'http://127.0.0.1:9/hook' });
    await appendToEventLog(
      db.dataSource,
      topic,
      [...events, poison].map((e) => ({
        key: e === poison ? ALICE : String((e.data as { receiptId?: string }).receiptId ?? ''),
        value: Buffer.from(JSON.stringify(e)),
      })),
    );
    await embeddedLogCaughtUp(db.dataSource);
    await queueChanges(db.dataSource, () => new Date());
  });
  afterAll(async () => {
    await api?.close();
    await db?.drop();
  });

  const del = (name: string, token?: string) =>
    fetch(`${api.baseUrl}/v2/customers/${encodeURIComponent(name)}`, { method: 'DELETE', headers: token ? { authorization: `Bearer ${token}` } : {} }).then(
      async (r) => ({
        status: r.status,
        body: (await r.json()) as any,
      }),
    );
  const everything = async () => {
    const token = api.token(APP);
    const pages = await Promise.all(
      ['/v2/customers?limit=1000', '/v2/transactions?limit=1000', '/v2/customers?changedAfter=0&limit=1000', '/v2/transactions?changedAfter=0&limit=1000'].map(
        (p) => api.get(p, token),
      ),
    );
    for (const p of pages) expect(p.status).toBe(200);
    return JSON.stringify(pages.map((p) => p.body));
  };
  /** Where the name is still stored as text outside the read models: the log, dead letters, webhook deliveries. */
  const storedMentions = async (name: string) => ({
    eventLog: (await db.dataSource.query(`SELECT count(*)::int AS n FROM public.event_log WHERE convert_from(value, 'UTF8') LIKE $1`, [`%${name}%`]))[0].n,
    deadLetters: (
      await db.dataSource.query(
        `SELECT count(*)::int AS n FROM public.dead_letters WHERE convert_from(value, 'UTF8') LIKE $1 OR reason LIKE $1 OR convert_from(key, 'UTF8') LIKE $1`,
        [`%${name}%`],
      )
    )[0].n,
    deliveries: (await db.dataSource.query(`SELECT count(*)::int AS n FROM public.webhook_deliveries WHERE payload LIKE $1`, [`%${name}%`]))[0].n,
  });

  it('before: every surface shows the customers (the checks below would see them)', async () => {
    const all = await everything();
    for (const name of [...ERASED, DAVE]) expect(all).toContain(name);
    expect(await storedMentions(ALICE)).toEqual({ eventLog: 5, deadLetters: 1, deliveries: expect.any(Number) });
    expect((await storedMentions(ALICE)).deliveries).toBeGreaterThan(0);
  });

  it('DELETE over HTTP: 403 without the scope, 400 naming the parameter, 202 with it; the audit row holds no username; then no surface shows alice', async () => {
    expect(await del(ALICE, api.token(APP))).toMatchObject({ status: 403 });
    expect(await del(ALICE)).toMatchObject({ status: 401 });
    const eraser = api.token(APP, ['customers:erase']);
    const withNul = await del('a\u0000b', eraser);
    expect(withNul.status).toBe(400);
    expect(JSON.stringify(withNul.body)).toContain('applicationUsername');

    // The contract's whole range: 512 UTF-8 bytes (1536 characters percent-encoded) are taken, 513 refused naming the parameter.
    expect(await del('é'.repeat(256), eraser)).toMatchObject({ status: 202 });
    const over = await del(`x${'é'.repeat(256)}`, eraser);
    expect({ status: over.status, parameter: over.body.parameter }).toEqual({ status: 400, parameter: 'applicationUsername' });
    await db.dataSource.query(`DELETE FROM public.erasure_audit`);

    const accepted = await del(ALICE, eraser);
    expect(accepted.status).toBe(202);
    expect(accepted.body).toEqual({ eventId: expect.stringMatching(/^erasure-/) });
    const audit = await db.dataSource.query(`SELECT app_id, event_id, via FROM public.erasure_audit`);
    expect(audit).toEqual([{ app_id: APP, event_id: accepted.body.eventId, via: 'api' }]);
    expect(JSON.stringify(await db.dataSource.query(`SELECT * FROM public.erasure_audit`))).not.toContain('alice');

    await embeddedLogCaughtUp(db.dataSource);
    await expectEventually(async () => expect(await everything()).not.toContain(ALICE));
    const all = await everything();
    for (const name of [BOB, CAROL, DAVE]) expect(all).toContain(name);
    expect(await storedMentions(ALICE)).toEqual({ eventLog: 0, deadLetters: 0, deliveries: 0 });
    // The transactions stay, without owner (the moved receipt's too).
    const tx = await api.get('/v2/transactions?limit=1000', api.token(APP));
    expect(tx.body.rows.map((r: { transactionId: string }) => r.transactionId).sort()).toEqual([
      'apple:a-1',
      'apple:a-2',
      'apple:a-3',
      'apple:b-1',
      'apple:c-1',
      'apple:d-1',
      'apple:d-2',
    ]);
  });

  it('the CLI: usage errors exit 2; names as arguments and from a file exit 0; then no surface shows them', async () => {
    expect((await runCli(['customers', 'erase', BOB], env)).code).toBe(2);
    expect((await runCli(['customers', 'erase', '--app', APP], env)).code).toBe(2);
    expect((await runCli(['customers', 'erase', '--app', APP, '--file', '/nonexistent/erase.txt'], env)).code).toBe(2);

    const byArg = await runCli(['customers', 'erase', '--app', APP, BOB], env);
    expect(byArg).toMatchObject({ code: 0, stdout: expect.stringMatching(/^erased 1 customer/) });
    const file = writeTempFile('erase.txt', `${CAROL}\n\n`);
    const byFile = await runCli(['customers', 'erase', '--app', APP, '--file', file], env);
    expect(byFile).toMatchObject({ code: 0, stdout: expect.stringMatching(/^erased 1 customer/) });
    expect(byArg.stdout + byArg.stderr + byFile.stdout + byFile.stderr).not.toMatch(/bob|carol/);
    expect(await db.dataSource.query(`SELECT via, count(*)::int AS n FROM public.erasure_audit GROUP BY via ORDER BY via`)).toEqual([
      { via: 'api', n: 1 },
      { via: 'cli', n: 2 },
    ]);

    await embeddedLogCaughtUp(db.dataSource);
    const all = await everything();
    for (const name of ERASED) expect(all).not.toContain(name);
    expect(all).toContain(DAVE);
    for (const name of ERASED) expect(await storedMentions(name)).toEqual({ eventLog: 0, deadLetters: 0, deliveries: 0 });
  });

  it('the OpenAPI document describes the route: its scope, 202 with eventId, the parameter', async () => {
    const doc = (await api.get('/openapi.json')).body;
    const op = doc.paths['/v2/customers/{applicationUsername}'].delete;
    expect(op.operationId).toBe('eraseCustomer');
    expect(JSON.stringify(op.security)).toContain('customers:erase');
    expect(op.responses['202'].content['application/json'].schema.required).toEqual(['eventId']);
    expect(op.parameters.map((p: { name: string; in: string }) => `${p.in}:${p.name}`)).toContain('path:applicationUsername');
    expect(Object.keys(op.responses)).toEqual(expect.arrayContaining(['400', '401', '403']));
  });

  it('rebuild and rebuild --verify (the built CLI): still erased, no drift', async () => {
    const before = await everything();
    const rebuilt = await runCli(['rebuild'], env);
    expect({ code: rebuilt.code, out: rebuilt.stdout + rebuilt.stderr }).toMatchObject({ code: 0, out: expect.stringMatching(/switched to generation 2/) });
    const verify = await runCli(['rebuild', '--verify'], env);
    expect({ code: verify.code, out: verify.stdout + verify.stderr }).toMatchObject({ code: 0 });
    const after = await everything();
    for (const name of ERASED) expect(after).not.toContain(name);
    expect(JSON.parse(after)[0]).toEqual(JSON.parse(before)[0]);
    expect(JSON.parse(after)[1]).toEqual(JSON.parse(before)[1]);
    for (const name of ERASED) expect(await storedMentions(name)).toEqual({ eventLog: 0, deadLetters: 0, deliveries: 0 });
  });
});

// The same on Kafka: the service cannot rewrite the topic (docs/privacy.md, "Kafka"), but the read
// models, both feeds and the dead letters forget the names, and so does every replay.
describe('forget a customer on Kafka (e2e: HTTP, CLI, rebuild; real broker and PostgreSQL)', () => {
  let db: TestDatabase;
  let api: TestApp;
  let topic: string;
  let env: Record<string, string>;

  beforeAll(async () => {
    db = await createTestDatabase('erasure_kafka');
    topic = uniqueTopic('erasure');
    await createTopic(topic, 3);
    env = {
      DATABASE_URL: db.url,
      KAFKA_BROKERS: kafkaBrokers(),
      KAFKA_TOPIC: topic,
      KAFKA_GROUP_ID: `g-${topic}`,
      KAFKA_SESSION_TIMEOUT_MS: '6000',
      LOG_LEVEL: 'error',
    };
    api = await startTestApp({ databaseUrl: db.url, env: { ...env, CONSUMER_ENABLED: 'true', LOG_LEVEL: 'silent' } });
    await produce(
      topic,
      [...events, poison].map((e) => Buffer.from(JSON.stringify(e))),
    );
    await waitUntilCaughtUp(db.dataSource, topic, 60_000);
  });
  afterAll(async () => {
    await api?.close();
    await db?.drop();
  });

  const shown = async () => {
    const token = api.token(APP);
    const pages = await Promise.all(
      ['/v2/customers?limit=1000', '/v2/transactions?limit=1000', '/v2/customers?changedAfter=0&limit=1000'].map((p) => api.get(p, token)),
    );
    return JSON.stringify(pages.map((p) => p.body));
  };
  const deadLetterMentions = async (name: string) =>
    (
      await db.dataSource.query(`SELECT count(*)::int AS n FROM public.dead_letters WHERE convert_from(value, 'UTF8') LIKE $1 OR reason LIKE $1`, [`%${name}%`])
    )[0].n;

  it('DELETE and customers erase append to the topic; listings, feed and dead letters forget; rebuild --verify agrees', async () => {
    expect(await shown()).toContain(ALICE);
    expect(await deadLetterMentions(ALICE)).toBe(1);
    const res = await fetch(`${api.baseUrl}/v2/customers/${encodeURIComponent(ALICE)}`, {
      method: 'DELETE',
      headers: { authorization: `Bearer ${api.token(APP, ['customers:erase'])}` },
    });
    expect(res.status).toBe(202);
    const cli = await runCli(['customers', 'erase', '--app', APP, BOB, CAROL], env);
    expect({ code: cli.code, out: cli.stdout }).toEqual({
      code: 0,
      out: expect.stringMatching(/^erased 2 customer\(s\) of erase-app: 2 customer.erased event\(s\) appended, 0 stored event\(s\)/),
    });
    await waitUntilCaughtUp(db.dataSource, topic, 60_000);
    const after = await shown();
    for (const name of ERASED) expect(after).not.toContain(name);
    expect(after).toContain(DAVE);
    expect(await deadLetterMentions(ALICE)).toBe(0);

    const verify = await runCli(['rebuild', '--verify'], env);
    expect({ code: verify.code, out: verify.stdout + verify.stderr }).toMatchObject({ code: 0 });
    const rebuilt = await runCli(['rebuild'], env);
    expect(rebuilt.code).toBe(0);
    const replayed = await shown();
    for (const name of ERASED) expect(replayed).not.toContain(name);
    expect(JSON.parse(replayed)[0]).toEqual(JSON.parse(after)[0]);
  });
});
