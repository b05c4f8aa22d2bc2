import { jest } from '@jest/globals';
import { spawn } from 'node:child_process';
import path from 'node:path';
import { createTestDatabase, type TestDatabase } from '../utils/database.js';
import { serviceEnv } from '../utils/processes.js';

// A command's whole output reaches a pipe, even when the reader is slower than the command: the
// CLI exits explicitly, and a pipe is written asynchronously.
jest.setTimeout(60_000);

const root = path.resolve(import.meta.dirname, '../..');
let db: TestDatabase;

beforeAll(async () => {
  db = await createTestDatabase('cli_output');
  const [{ id }] = await db.dataSource.query(
    `INSERT INTO public.webhook_endpoints (app_id, url, secret, customers_cursor, transactions_cursor) VALUES ('demo-app', 'https://hooks.example.com/in', 'whsec_x', '0', '0') RETURNING id`,
  );
  await db.dataSource.query(
    `INSERT INTO public.webhook_deliveries (endpoint_id, event_type, order_key, payload)
     SELECT $1, 'transaction.updated', 'customer:user-' || n, '{}' FROM generate_series(1, 9999) AS n`,
    [id],
  );
});
afterAll(() => db?.drop());

it('webhooks deliveries piped to a slow reader: every line arrives, exit 0', async () => {
  const [{ id }] = await db.dataSource.query(`SELECT id FROM public.webhook_endpoints`);
  // What a user types: the reader starts after the command has long finished writing.
  const script = `set -o pipefail; "${process.execPath}" dist/cli.js webhooks deliveries --id ${id} --limit 9999 | (sleep 2; cat)`;
  const child = spawn('bash', ['-c', script], { cwd: root, env: serviceEnv({ DATABASE_URL: db.url }), stdio: ['ignore', 'pipe', 'pipe'] });
  let stdout = '';
  let stderr = '';
  child.stdout.on('data', (c) => (stdout += c));
  child.stderr.on('data', (c) => (stderr += c));
  const code = await new Promise((resolve) => child.once('close', resolve));
  expect(stderr).toBe('');
  expect(code).toBe(0);
  const lines = stdout.trimEnd().split('\n');
  expect(lines).toHaveLength(9999);
  expect(new Set(lines.map((l) => l.split('\t')[2])).size).toBe(9999);
});
