export const CONSUMER_STATUS = Symbol('CONSUMER_STATUS');

/**
 * - connecting: starting, or no answer from the broker lately (reason says for how long);
 * - running: consuming every assigned partition;
 * - retrying: a batch keeps failing against PostgreSQL and is retried (nothing is skipped);
 * - stuck: a partition's batch fails in a way retrying cannot cure (stuck[] says which and why); it is
 *   retried with backoff until an operator fixes the cause;
 * - blocked: a partition's stored offset lies outside the log; the operator decides (docs/operations.md);
 * - crashed: the consumer crashed more often than its budget allows; it keeps restarting;
 * - stopped: shut down.
 */
export type ConsumerState = 'connecting' | 'running' | 'retrying' | 'stuck' | 'blocked' | 'crashed' | 'stopped';

export type BlockedPartition = { partition: number; storedOffset: string | null; logStart: string; logEnd: string; reason: string };

/** `offset`: the first message of the failing batch; `code`: PostgreSQL's SQLSTATE ('unknown' without one). */
export type StuckPartition = { partition: number; offset: string; code: string; error: string; since: string };

export type ConsumerHealth = { state: ConsumerState; reason?: string; blocked?: BlockedPartition[]; stuck?: StuckPartition[] };

export interface ConsumerStatus {
  health(): ConsumerHealth;
  readonly topic: string;
  /** Next offset to be written per partition of the log (Kafka's log end offset). */
  endOffsets(): Promise<Map<number, bigint>>;
}
