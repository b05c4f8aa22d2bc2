export const CONSUMER_STATUS = Symbol('CONSUMER_STATUS');
export type ConsumerState = 'starting' | 'running' | 'retrying' | 'stopped';
export interface ConsumerStatus {
  state(): ConsumerState;
  readonly topic: string;
  /** Next offset to be written per partition of the log (Kafka's log end offset). */
  endOffsets(): Promise<Map<number, bigint>>;
}
