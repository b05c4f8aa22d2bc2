export const CONSUMER_STATUS = Symbol('CONSUMER_STATUS');

/**
 * - connecting: starting, or no answer from the broker lately (reason says for how long);
 * - running: consuming every assigned partition;
 * - retrying: a batch keeps failing against PostgreSQL and is retried (nothing is skipped);
 * - blocked: a partition's stored offset lies outside the log; the operator decides (docs/operations.md);
 * - crashed: the consumer crashed more often than its budget allows; it keeps restarting;
 * - stopped: shut down.
 */
export type ConsumerState = 'connecting' | 'running' | 'retrying' | 'blocked' | 'crashed' | 'stopped';

export type BlockedPartition = { partition: number; storedOffset: string | null; logStart: string; logEnd: string; reason: string };

export type ConsumerHealth = { state: ConsumerState; reason?: string; blocked?: BlockedPartition[] };

export interface ConsumerStatus {
  health(): ConsumerHealth;
  readonly topic: string;
  /** Next offset to be written per partition of the log (Kafka's log end offset). */
  endOffsets(): Promise<Map<number, bigint>>;
}
