import { LIVE_PROJECTION_LOCK } from '../../src/database/advisory-locks.js';
import { startTestApp, type TestApp } from '../utils/app.js';
import { createTestDatabase, type TestDatabase } from '../utils/database.js';
import { expectEventually } from '../utils/expect-eventually.js';
import { createTopic, kafkaBrokers, produce, uniqueTopic, waitUntilCaughtUp } from '../utils/kafka.js';
import { freePort } from '../kafka/broker.mjs';
import { scenarioEvents, toBuffers } from '../utils/scenario.js';

const metric = (text: string, name: string, labels: Record<string, string>) => {
  const wanted = Object.entries(labels).map(([k, v]) => `${k}="${v}"`);
  const line = text.split('\n').find((l) => l.startsWith(name + '{') && wanted.every((w) => l.includes(w)));
  return line === undefined ? undefined : Number(line.slice(line.lastIndexOf(' ') + 1));
};

describe('metrics and readiness (e2e, real broker and PostgreSQL)', () => {
  let db: TestDatabase;
  const apps: TestApp[] = [];

  beforeEach(async () => {
    db = await createTestDatabase('obs');
  });
  afterEach(async () => {
    await Promise.all(apps.splice(0).map((a) => a.close()));
    await db?.drop();
  });

  it('exposes the lag a paused consumer accumulates, then its recovery, plus projection and HTTP metrics', async () => {
    const topic = uniqueTopic('lag');
    await createTopic(topic, 1);
    const api = await startTestApp({
      databaseUrl: db.url,
      env: { KAFKA_BROKERS: kafkaBrokers(), KAFKA_TOPIC: topic, KAFKA_GROUP_ID: `g-${topic}`, CONSUMER_ENABLED: 'true', KAFKA_SESSION_TIMEOUT_MS: '6000' },
    });
    apps.push(api);
    await produce(topic, toBuffers(scenarioEvents({ seed: 71, customers: 5, apps: ['app-1'] })));
    await waitUntilCaughtUp(db.dataSource, topic);
    await api.get('/v2/transactions', api.token('app-1'));
    const scrape = async () => (await fetch(`${api.baseUrl}/metrics`)).text();

    const text = await scrape();
    expect(metric(text, 'subscription_records_projection_consumer_lag_messages', { topic, partition: '0' })).toBe(0);
    expect(metric(text, 'subscription_records_projection_events_total', { type: 'transaction.updated', outcome: 'applied' })).toBeGreaterThan(0);
    expect(metric(text, 'subscription_records_http_request_duration_seconds_count', { route: '/v2/transactions', status: '200' })).toBe(1);
    expect(Number(/^subscription_records_projection_newest_event_age_seconds (\S+)$/m.exec(text)?.[1])).toBeGreaterThan(0);
    expect(text).toMatch(/^subscription_records_build_info\{version="\d+\.\d+\.\d+[^"]*",node_version="v\d+\.\d+\.\d+"\} 1$/m);
    // one namespace for every series the service exports
    const names = [...text.matchAll(/^([a-z_:][a-z0-9_:]*)(?:\{| )/gm)].map((m) => m[1]);
    expect(names.filter((n) => !n.startsWith('subscription_records_'))).toEqual([]);

    // pause the live projection the way a generation switch does, and publish meanwhile
    const pause = db.dataSource.createQueryRunner();
    await pause.connect();
    await pause.startTransaction();
    await pause.query('SELECT pg_advisory_xact_lock($1)', [LIVE_PROJECTION_LOCK]);
    try {
      const held = toBuffers(scenarioEvents({ seed: 72, customers: 10, apps: ['app-1'], tag: 'held' }));
      await produce(topic, held);
      await expectEventually(async () =>
        expect(metric(await scrape(), 'subscription_records_projection_consumer_lag_messages', { topic, partition: '0' })).toBe(held.length),
      );
      expect((await api.get('/health/ready')).status).toBe(200); // paused, not stopped
    } finally {
      await pause.commitTransaction();
      await pause.release();
    }
    await expectEventually(async () =>
      expect(metric(await scrape(), 'subscription_records_projection_consumer_lag_messages', { topic, partition: '0' })).toBe(0),
    );
  });

  it('is not ready while the consumer cannot run', async () => {
    const api = await startTestApp({
      databaseUrl: db.url,
      env: { KAFKA_BROKERS: `127.0.0.1:${await freePort()}`, KAFKA_TOPIC: 'nowhere', CONSUMER_ENABLED: 'true' },
    });
    apps.push(api);
    const ready = await api.get('/health/ready');
    expect(ready.status).toBe(503);
    expect(ready.body.checks.details.consumer.status).toBe('down');
    expect((await api.get('/health/live')).status).toBe(200);
  });
});
