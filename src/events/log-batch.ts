// The log's contract with what reads it (docs/events/README.md): the messages a log source (Kafka,
// the embedded event log, a rebuild's bounded range) hands over in batches of one partition, what
// projecting a batch comes to, and the dead letters it leaves. Shared by the sources, the projector
// and the projection, so none of them imports another for it.

import { createHash } from 'node:crypto';
import type { RejectCode } from './decode-event.js';
import type { PurchaseEvent } from './purchase-event.js';

export type LogMessage = {
  offset: string;
  /** Bytes as the log holds them (Kafka keys may be any bytes), or text from the embedded log. */
  key: Buffer | string | null;
  value: Buffer | null;
  /** When the log received the message, epoch ms (Kafka's timestamp, the event log's appended_at). */
  timestamp?: string;
};
export type Batch = { topic: string; partition: number; messages: readonly LogMessage[] };
export type DeadLetter = { topic: string; partition: number; offset: string; key: Buffer | null; value: Buffer; code: RejectCode; reason: string };

export type BatchOutcome =
  | {
      kind: 'applied';
      nextOffset: string;
      /** Events that changed (or could have changed) the read models. */
      applied: PurchaseEvent[];
      /** Messages below the stored offset: already projected by an earlier run. */
      alreadyProjected: number;
      deadLetters: DeadLetter[];
    }
  | { kind: 'gap'; storedOffset: string };

/** Identifies the message projected last in a partition, so a rewritten log is recognised on resume. */
export const messageSha1 = (value: Buffer | null) =>
  createHash('sha1')
    .update(value ?? Buffer.alloc(0))
    .digest();
