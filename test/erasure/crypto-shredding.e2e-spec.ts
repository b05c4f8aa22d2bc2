import { jest } from '@jest/globals';
import { createDecipheriv } from 'node:crypto';
import { NotificationPublisher } from '../../src/store-notifications/notification-publisher.js';
import { startTestApp, type TestApp } from '../utils/app.js';
import { createTestDatabase, type TestDatabase } from '../utils/database.js';
import { embeddedLogCaughtUp, txEvent } from '../utils/events.js';
import { createTopic, kafkaBrokers, readAll, uniqueTopic, waitUntilCaughtUp } from '../utils/kafka.js';
import { runCli } from '../utils/processes.js';

jest.setTimeout(180_000);

// Crypto-shredding (docs/privacy.md): with CRYPTO_SHREDDING on, the events the service publishes
// itself (here through the store notifications' publisher) hold no readable username; the listing
// shows it (the consumer opens it with the customer's key); erasing deletes the key, so every replay
// of those events (rebuild, rebuild --verify) ends with the customer erased, nothing dead-lettered.
// A key gone without its erasure in the log ends the same way. On the embedded log and on Kafka.

const APP = 'shred-app';
const ZOE = 'zoe.shred@example.com';
const YAN = 'yan.shred@example.com';
const month = (m: number) => `2026-${String(m).padStart(2, '0')}-01T00:00:00Z`;
type Published = Parameters<NotificationPublisher['publish']>[0][number];
const tx = (id: string, receipt: string, user: string, time: string) =>
  txEvent({
    app: APP,
    time,
    data: {
      transactionId: `apple:${id}`,
      receiptId: `apple:${receipt}`,
      purchaseId: `apple:p-${receipt}`,
      purchaseDate: time,
      expirationDate: month(12),
      applicationUsername: user,
    },
  }) as Published;

function scenario(mode: 'embedded' | 'kafka') {
  let db: TestDatabase;
  let api: TestApp;
  let env: Record<string, string>;
  let topic: string;

  beforeAll(async () => {
    db = await createTestDatabase(`shred_${mode}`);
    topic = mode === 'kafka' ? uniqueTopic('shred') : 'shred-events';
    if (mode === 'kafka') await createTopic(topic, 3);
    env = {
      DATABASE_URL: db.url,
      KAFKA_TOPIC: topic,
      CRYPTO_SHREDDING: 'true',
      LOG_LEVEL: 'error',
      ...(mode === 'kafka' ? { KAFKA_BROKERS: kafkaBrokers(), KAFKA_GROUP_ID: `g-${topic}`, KAFKA_SESSION_TIMEOUT_MS: '6000' } : {}),
    };
    api = await startTestApp({ databaseUrl: db.url, env: { ...env, CONSUMER_ENABLED: 'true', LOG_LEVEL: 'silent' } });
  });
  afterAll(async () => {
    await api?.close();
    await db?.drop();
  });

  const caughtUp = () => (mode === 'kafka' ? waitUntilCaughtUp(db.dataSource, topic, 60_000) : embeddedLogCaughtUp(db.dataSource));
  const stored = async (): Promise<string[]> =>
    mode === 'kafka'
      ? (await readAll(topic, published)).map((m) => m.value!.toString('utf8'))
      : ((await db.dataSource.query(`SELECT convert_from(value, 'UTF8') AS v FROM public.event_log WHERE topic = $1`, [topic])) as { v: string }[]).map(
          (r) => r.v,
        );
  const customers = async () =>
    (await api.get('/v2/customers?limit=1000', api.token(APP))).body.rows as { applicationUsername: string; receiptIds: string[] }[];
  const deadLetters = async () => (await db.dataSource.query(`SELECT count(*)::int AS n FROM public.dead_letters`))[0].n as number;
  let published = 0;
  const publish = async (events: Published[]) => {
    await api.app.get(NotificationPublisher, { strict: false }).publish(events);
    published += events.length;
  };

  it('the log holds sealed usernames only; the listing shows them; erasure deletes the key and every replay ends erased', async () => {
    await publish([tx('z-1', 'r-z', ZOE, month(1)), tx('z-2', 'r-z2', ZOE, month(2)), tx('y-1', 'r-y', YAN, month(1))]);
    await caughtUp();
    const log = await stored();
    expect(log).toHaveLength(3);
    for (const v of log) {
      expect(v).not.toContain('shred@example.com');
      expect(JSON.parse(v).data.applicationUsername).toMatch(/^sealed:v1:[0-9a-f]{64}:/);
    }
    expect((await customers()).map((c) => c.applicationUsername).sort()).toEqual([YAN, ZOE]);
    expect((await db.dataSource.query(`SELECT count(*)::int AS n FROM public.customer_keys WHERE app_id = $1`, [APP]))[0].n).toBe(2);

    const res = await fetch(`${api.baseUrl}/v2/customers/${encodeURIComponent(ZOE)}`, {
      method: 'DELETE',
      headers: { authorization: `Bearer ${api.token(APP, ['customers:erase'])}` },
    });
    expect(res.status).toBe(202);
    published += 1;
    expect((await db.dataSource.query(`SELECT count(*)::int AS n FROM public.customer_keys WHERE app_id = $1`, [APP]))[0].n).toBe(1);
    await caughtUp();
    expect((await customers()).map((c) => c.applicationUsername)).toEqual([YAN]);
    // No key left opens Zoe's sealed names in the log (docs/privacy.md: IV 12 bytes, ciphertext, tag 16; AAD app NUL hash).
    const keys = (await db.dataSource.query(`SELECT key FROM public.customer_keys`)) as { key: Buffer }[];
    const tryOpen = (sealedName: string, key: Buffer): string | undefined => {
      const [, , hash, b64] = sealedName.split(':');
      const sealed = Buffer.from(b64, 'base64url');
      const decipher = createDecipheriv('aes-256-gcm', key, sealed.subarray(0, 12)).setAAD(Buffer.from(`${APP}\u0000${hash}`));
      decipher.setAuthTag(sealed.subarray(sealed.length - 16));
      try {
        return Buffer.concat([decipher.update(sealed.subarray(12, sealed.length - 16)), decipher.final()]).toString('utf8');
      } catch {
        return undefined;
      }
    };
    const readable = log.map((v) => keys.map(({ key }) => tryOpen(JSON.parse(v).data.applicationUsername, key)).find((n) => n !== undefined));
    expect(readable.filter((n) => n !== undefined)).toEqual([YAN]); // Zoe's two open with no key left

    // Zoe signs up again: a new key; her old events stay unreadable to it.
    const [{ at }] = await db.dataSource.query(`SELECT requested_at AS at FROM public.erasure_audit`);
    await publish([tx('z-3', 'r-z3', ZOE, new Date(new Date(at).getTime() + 1).toISOString())]);
    await caughtUp();
    const live = await customers();
    expect(live.map((c) => [c.applicationUsername, c.receiptIds])).toEqual([
      [YAN, ['apple:r-y']],
      [ZOE, ['apple:r-z3']],
    ]);
    const keysNow = (await db.dataSource.query(`SELECT key FROM public.customer_keys`)) as { key: Buffer }[];
    expect(keysNow).toHaveLength(2);
    expect(
      log
        .map((v) => keysNow.map(({ key }) => tryOpen(JSON.parse(v).data.applicationUsername, key)).find((n) => n !== undefined))
        .filter((n) => n !== undefined),
    ).toEqual([YAN]);

    const verify = await runCli(['rebuild', '--verify'], env);
    expect({ code: verify.code, out: verify.stdout + verify.stderr }).toMatchObject({ code: 0 });
    const rebuilt = await runCli(['rebuild'], env);
    expect({ code: rebuilt.code, err: rebuilt.stderr }).toMatchObject({ code: 0 });
    expect(await customers()).toEqual(live);
    expect((await api.get('/v2/transactions?limit=1000', api.token(APP))).body.paging.total).toBe(4);
    expect(await deadLetters()).toBe(0);
  });

  it('a key gone without its erasure in the log: the replay names no one for those events (no customer "erased:...", nothing dead-lettered)', async () => {
    const [{ hash }] = await db.dataSource.query(`SELECT public.erasure_hash($1, $2) AS hash`, [APP, YAN]);
    await db.dataSource.query(`DELETE FROM public.customer_keys WHERE app_id = $1 AND username_hash = $2`, [APP, hash]);
    const rebuilt = await runCli(['rebuild'], env);
    expect({ code: rebuilt.code, err: rebuilt.stderr }).toMatchObject({ code: 0 });
    expect((await customers()).map((c) => c.applicationUsername)).toEqual([ZOE]);
    expect((await api.get('/v2/transactions?limit=1000', api.token(APP))).body.paging.total).toBe(4);
    expect(await deadLetters()).toBe(0);
  });
}

describe('crypto-shredding on the embedded log (e2e: real PostgreSQL)', () => scenario('embedded'));
describe('crypto-shredding on Kafka (e2e: real broker and PostgreSQL)', () => scenario('kafka'));
