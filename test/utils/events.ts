import type { DataSource } from 'typeorm';
import { applyBatch } from '../../src/projection/apply-batch.js';
import { type BatchOutcome } from '../../src/events/log-batch.js';
import { expectEventually } from './expect-eventually.js';

export type TxData = Record<string, unknown> & { transactionId: string };

let seq = 0;

/** A transaction.updated event; ids default to the `apple:` platform. */
export function txEvent(o: { app?: string; id?: string; time: string; data: TxData }): Record<string, unknown> {
  const platform = (o.data.platform as string | undefined) ?? String(o.data.transactionId).split(':')[0];
  return {
    specversion: '1.0',
    id: o.id ?? `evt-${++seq}`,
    source: 'test',
    type: 'transaction.updated',
    time: o.time,
    appid: o.app ?? 'app-1',
    datacontenttype: 'application/json',
    data: {
      purchaseId: `${platform}:p-${o.data.transactionId}`,
      productId: `${platform}:monthly`,
      platform,
      receiptId: `${platform}:r-${o.data.transactionId}`,
      ...o.data,
    },
  };
}

export function linkEvent(o: { app?: string; id?: string; time: string; receiptId: string; user: string }): Record<string, unknown> {
  return {
    specversion: '1.0',
    id: o.id ?? `evt-${++seq}`,
    source: 'test',
    type: 'receipt.linked',
    time: o.time,
    appid: o.app ?? 'app-1',
    data: { receiptId: o.receiptId, applicationUsername: o.user },
  };
}

const nextOffset = new WeakMap<DataSource, number>();

/** Writes events through the projection's own write path, as one batch of a fake partition. */
export async function project(db: DataSource, events: unknown[], topic = 'fixture'): Promise<BatchOutcome> {
  const start = nextOffset.get(db) ?? 0;
  nextOffset.set(db, start + events.length);
  return applyBatch(db, {
    topic,
    partition: 0,
    messages: events.map((e, i) => ({
      offset: String(start + i),
      key: null,
      value: Buffer.from(typeof e === 'string' ? e : JSON.stringify(e)),
    })),
  });
}

/** Waits until the live consumer has projected everything in the embedded event log, every topic. */
export async function embeddedLogCaughtUp(db: DataSource): Promise<void> {
  await expectEventually(async () => {
    const [{ behind }] = await db.query(
      `SELECT (SELECT coalesce(max("offset") + 1, 0) FROM public.event_log) - coalesce((SELECT sum(next_offset) FROM read_model.projection_offsets), 0) AS behind`,
    );
    expect(Number(behind)).toBe(0);
  });
}
