import { jest } from '@jest/globals';
import { chmodSync, mkdtempSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import pg from 'pg';
import { startEmbeddedPostgres, type EmbeddedDatabase } from '../../src/database/embedded-postgres.js';
import { freePort } from '../kafka/broker.mjs';
import { startTestApp, type TestApp } from '../utils/app.js';
import { expectEventually } from '../utils/expect-eventually.js';

// A database that goes away or is too slow is not a server error: 503 database_unavailable with
// Retry-After, and normal answers once it is back. A PostgreSQL of this file's own, to stop at will.

jest.setTimeout(180_000);

describe('database outage (e2e, real PostgreSQL stopped and started)', () => {
  let dir: string;
  let port: number;
  let server: EmbeddedDatabase;
  let api: TestApp;

  beforeAll(async () => {
    dir = mkdtempSync(path.join(os.tmpdir(), 'sr-outage-'));
    chmodSync(dir, 0o755);
    port = await freePort();
    server = await startEmbeddedPostgres(dir, port);
    api = await startTestApp({ databaseUrl: server.url, env: { STATEMENT_TIMEOUT_MS: '300' } });
  });
  afterAll(async () => {
    await api?.close();
    await server?.stop();
  });

  it('answers 503 database_unavailable with Retry-After while PostgreSQL is down, and 200 once it is back', async () => {
    const token = api.token('app-1');
    expect((await api.get('/v2/transactions', token)).status).toBe(200);
    await server.stop();
    const down = await api.get('/v2/transactions', token);
    expect(down.status).toBe(503);
    expect(down.headers.get('content-type')).toContain('application/problem+json');
    expect(down.headers.get('retry-after')).toBe('5');
    expect(down.body).toMatchObject({ status: 503, code: 'database_unavailable' });
    const ready = await api.get('/health/ready');
    expect(ready.status).toBe(503);
    // unauthenticated: it says the database is down, not the driver's words (host, port, user)
    expect(ready.body).toMatchObject({ checks: { error: { database: { status: 'down', reason: 'PostgreSQL does not answer (the log says why)' } } } });
    expect(JSON.stringify(ready.body)).not.toContain(String(port));

    server = await startEmbeddedPostgres(dir, port);
    await expectEventually(async () => expect((await api.get('/v2/transactions', token)).status).toBe(200), 30_000);
  });

  it('runs with the settings for a write-heavy projection, not PostgreSQL’s defaults', async () => {
    const client = new pg.Client({ connectionString: server.url });
    await client.connect();
    try {
      const show = async (name: string) => ((await client.query(`SHOW ${name}`)).rows[0] as Record<string, string>)[name];
      expect(await show('max_wal_size')).toBe('4GB');
      expect(await show('checkpoint_timeout')).toBe('15min');
      expect(await show('shared_buffers')).not.toBe('128MB');
    } finally {
      await client.end();
    }
  });

  it('a statement that exceeds STATEMENT_TIMEOUT_MS answers 503, not 500', async () => {
    const blocker = new pg.Client({ connectionString: server.url });
    await blocker.connect();
    try {
      await blocker.query('BEGIN');
      await blocker.query('LOCK TABLE read_model.transaction_day_counts IN ACCESS EXCLUSIVE MODE');
      const res = await api.get('/v2/transactions', api.token('app-1'));
      expect(res.status).toBe(503);
      expect(res.body.code).toBe('database_unavailable');
    } finally {
      await blocker.query('ROLLBACK');
      await blocker.end();
    }
  });
});
