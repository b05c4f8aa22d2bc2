import { Logger, type LoggerService } from '@nestjs/common';
import { Projector } from '../../src/ingestion/projector.js';
import type { ProjectionObserver } from '../../src/ingestion/projection-observer.js';
import { createTestDatabase, type TestDatabase } from '../utils/database.js';
import { txEvent } from '../utils/events.js';
import { expectEventually } from '../utils/expect-eventually.js';
import { countRows } from '../utils/read-models.js';
import { toBuffers } from '../utils/scenario.js';

// A failure that retrying cannot cure is retried all the same (the operator's fix lets the batch go
// on by itself) but reported: the partition is `stuck` with PostgreSQL's SQLSTATE, in one log line.

const messages = (values: Buffer[]) => values.map((value, i) => ({ offset: String(i), key: null, value }));
const events = (n: number) =>
  toBuffers(Array.from({ length: n }, (_, i) => txEvent({ id: `e${i}`, time: '2024-01-01T00:00:00Z', data: { transactionId: `apple:t${i}` } })));

describe('a batch PostgreSQL keeps refusing (integration, real PostgreSQL)', () => {
  let db: TestDatabase;
  let projector: Projector;
  let failures: number;
  let lines: { level: string; message: Record<string, unknown> }[];

  beforeEach(async () => {
    db = await createTestDatabase('stuck');
    failures = 0;
    const observer: ProjectionObserver = { batchApplied: () => undefined, batchFailed: () => void failures++ };
    projector = new Projector(db.dataSource, observer, { eventTimeMaxSkewMs: 86_400_000 });
    lines = [];
    const keep = (level: string) => (message: unknown) => void lines.push({ level, message: message as Record<string, unknown> });
    Logger.overrideLogger({
      log: keep('log'),
      error: keep('error'),
      warn: keep('warn'),
      debug: keep('debug'),
      verbose: keep('verbose'),
    } satisfies LoggerService);
  });
  afterEach(async () => {
    Logger.overrideLogger(false);
    await db?.drop();
  });

  /** PostgreSQL raises `sqlstate` from a trigger on `table` until the trigger is dropped. */
  const refuse = (table: string, sqlstate: string, timing = 'BEFORE INSERT') =>
    db.dataSource.query(`
      CREATE FUNCTION public.refuse() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN RAISE EXCEPTION 'refused for the test' USING ERRCODE = '${sqlstate}'; END $$;
      CREATE TRIGGER refuse ${timing} ON read_model.${table} FOR EACH ROW EXECUTE FUNCTION public.refuse()`);
  const cure = (table: string) => db.dataSource.query(`DROP TRIGGER refuse ON read_model.${table}`);
  const stuckLines = () => lines.filter((l) => l.level === 'error' && String(l.message.msg).startsWith('partition stuck'));

  it('out of shared memory that outlasts a few attempts: retrying, then stuck with its SQLSTATE in one log line; applied once it passes', async () => {
    await refuse('transactions', '53200');
    let running = true;
    const applying = projector.apply({ topic: 'events', partition: 3, messages: messages(events(4)) }, { shouldContinue: () => running });
    try {
      // the first failures may pass (another session lets go of its locks)
      await expectEventually(() => expect(projector.health()).toMatchObject({ state: 'retrying' }), 5_000, 20);
      expect(stuckLines()).toHaveLength(0);
      await expectEventually(
        () =>
          expect(projector.health()).toMatchObject({ state: 'stuck', stuck: [{ partition: 3, offset: '0', code: '53200', error: 'refused for the test' }] }),
        10_000,
      );
      expect(projector.health()?.reason).toContain('partition 3 at offset 0: 53200 refused for the test');
      // still retried, still one line
      const failed = failures;
      await expectEventually(() => expect(failures).toBeGreaterThan(failed), 15_000);
      expect(stuckLines()).toHaveLength(1);
      expect(stuckLines()[0].message).toMatchObject({ topic: 'events', partition: 3, code: '53200' });

      await cure('transactions');
      await expect(applying).resolves.toMatchObject({ kind: 'applied', nextOffset: '4' });
      expect(projector.health()).toBeUndefined();
      expect(lines.filter((l) => l.message.msg === 'partition no longer stuck: its batch applied')).toHaveLength(1);
      expect(await countRows(db.dataSource, 'read_model.transactions')).toBe(4);
    } finally {
      running = false;
      await applying.catch(() => undefined);
    }
  });

  it('a content error no single event explains (the offset write refused) is stuck, and once cured no event is dead-lettered for it', async () => {
    await refuse('projection_offsets', '22023', 'BEFORE INSERT OR UPDATE');
    let running = true;
    const applying = projector.apply({ topic: 'events', partition: 0, messages: messages(events(4)) }, { shouldContinue: () => running });
    try {
      await expectEventually(() => expect(projector.health()).toMatchObject({ state: 'stuck', stuck: [{ partition: 0, offset: '0', code: '22023' }] }), 10_000);
      expect(stuckLines()).toHaveLength(1);
      await cure('projection_offsets');
      await expect(applying).resolves.toMatchObject({ kind: 'applied', nextOffset: '4' });
      expect(projector.health()).toBeUndefined();
      expect(await countRows(db.dataSource, 'public.dead_letters')).toBe(0);
      expect(await countRows(db.dataSource, 'read_model.transactions')).toBe(4);
    } finally {
      running = false;
      await applying.catch(() => undefined);
    }
  });

  it('a missing table (42P01) is stuck at the first failure', async () => {
    await db.dataSource.query(`ALTER TABLE read_model.receipts RENAME TO receipts_away`);
    let running = true;
    const applying = projector.apply({ topic: 'events', partition: 1, messages: messages(events(2)) }, { shouldContinue: () => running });
    try {
      await expectEventually(() => expect(projector.health()).toMatchObject({ state: 'stuck', stuck: [{ partition: 1, code: '42P01' }] }), 5_000, 20);
      expect(failures).toBe(1);
      await db.dataSource.query(`ALTER TABLE read_model.receipts_away RENAME TO receipts`);
      await expect(applying).resolves.toMatchObject({ kind: 'applied', nextOffset: '2' });
    } finally {
      running = false;
      await applying.catch(() => undefined);
    }
  });
});
