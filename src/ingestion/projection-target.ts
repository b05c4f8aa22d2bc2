import { LIVE_SCHEMA } from '../projection/apply-batch.js';

/** Where a consumer projects to, and how far it may go. */
export type ProjectionTarget = {
  /** `read_model` for the live projection, or the schema of a generation being built. */
  schema: string;
  /** Kafka consumer group; defaults to KAFKA_GROUP_ID. */
  groupId?: string;
  /**
   * Exclusive upper offset per partition: messages at or beyond it are left for later. Mutable, so a
   * rebuild can raise the bounds while its consumer runs. Absent: unbounded.
   */
  bounds?: Map<number, bigint>;
  /** Rebuild's bulk path: stage the decoded events instead of projecting them (ApplyOptions.stage). */
  stage?: boolean;
};

export const LIVE_TARGET: ProjectionTarget = { schema: LIVE_SCHEMA };
export const PROJECTION_TARGET = Symbol('PROJECTION_TARGET');
