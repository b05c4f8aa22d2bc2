import { webhooksSql } from '../../src/webhooks/webhooks.sql.js';
import { createTestDatabase, type TestDatabase } from '../utils/database.js';

// A receiver dedupes on webhook-id (docs/change-feed.md): ids must never repeat, also across a
// database that was recreated or restored, and a retry must carry the same id again.
const databases: TestDatabase[] = [];
afterAll(() => Promise.all(databases.map((db) => db.drop())));

async function queueAndClaim(db: TestDatabase, count: number): Promise<{ id: string; message_id: string }[]> {
  const [{ id }] = await db.dataSource.query(
    `INSERT INTO public.webhook_endpoints (app_id, url, secret, customers_cursor, transactions_cursor) VALUES ('app-1', 'https://hooks.example.com/in', 'whsec_x', '0', '0') RETURNING id::text AS id`,
  );
  const types = Array.from({ length: count }, () => 'transaction.updated');
  const keys = Array.from({ length: count }, (_, i) => `customer:user-${i}`);
  await db.dataSource.query(webhooksSql.queue, [id, types, keys, keys, keys.map(() => '{}')]);
  return claim(db, count);
}

/** An UPDATE ... RETURNING through TypeORM answers [rows, affected]. */
async function claim(db: TestDatabase, count: number): Promise<{ id: string; message_id: string }[]> {
  const [rows] = await db.dataSource.query(webhooksSql.claim, [count, 60_000]);
  return rows;
}

it('two databases made anew (a recreate, a restore) never hand out the same webhook-id, where row ids repeat', async () => {
  databases.push(await createTestDatabase('msgids_a'), await createTestDatabase('msgids_b'));
  const [a, b] = await Promise.all(databases.map((db) => queueAndClaim(db, 50)));
  // the row ids are the same in both: they cannot be the message ids
  expect(a.map((d) => d.id).sort()).toEqual(b.map((d) => d.id).sort());
  const ids = [...a, ...b].map((d) => d.message_id);
  for (const id of ids) expect(id).toMatch(/^msg_[0-9a-f]{32}$/);
  expect(new Set(ids).size).toBe(100);
});

it('a delivery claimed again (a retry) carries the id it was first sent with', async () => {
  const db = await createTestDatabase('msgids_retry');
  databases.push(db);
  const [first] = await queueAndClaim(db, 1);
  await db.dataSource.query(`UPDATE public.webhook_deliveries SET lease_until = now() - interval '1 second'`);
  const [again] = await claim(db, 1);
  expect(again).toMatchObject({ id: first.id, message_id: first.message_id });
});
