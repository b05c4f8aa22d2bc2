// Where the projection stands in each partition compared with what the log still holds. A stored
// offset outside [log start, log end] means the log changed under the read models (topic recreated
// or truncated, retention passed them): projecting on from there would skip or repeat events
// silently, so the partition is blocked until the operator decides (npm run cli -- offsets ...).

export type PartitionPosition = {
  partition: number;
  /** First offset the log still holds (Kafka's low watermark). */
  logStart: bigint;
  /** Next offset the log will write (Kafka's high watermark). */
  logEnd: bigint;
  /** Next offset the read models need; undefined when nothing was projected from the partition yet. */
  stored?: bigint;
};

export type PositionProblem = 'beyond-end' | 'before-start' | 'history-gone';

export function positionProblem(p: PartitionPosition): PositionProblem | undefined {
  if (p.stored === undefined) return p.logStart > 0n ? 'history-gone' : undefined;
  if (p.stored > p.logEnd) return 'beyond-end';
  if (p.stored < p.logStart) return 'before-start';
  return undefined;
}

export function describePosition(p: PartitionPosition): string {
  const at = `stored offset ${p.stored ?? 'none'}, log ${p.logStart}..${p.logEnd}`;
  switch (positionProblem(p)) {
    case 'beyond-end':
      return `partition ${p.partition}: ${at}: the log ends before the stored offset (topic recreated or truncated)`;
    case 'before-start':
      return `partition ${p.partition}: ${at}: events between the stored offset and the log start were deleted (retention)`;
    case 'history-gone':
      return `partition ${p.partition}: ${at}: nothing projected yet and the log no longer starts at 0 (retention)`;
    default:
      return `partition ${p.partition}: ${at}: ok`;
  }
}

/** Where `offsets reset --to` points: a named end of the log, or an offset that must lie within it. */
export function resetTarget(p: PartitionPosition, to: string): bigint {
  if (to === 'earliest') return p.logStart;
  if (to === 'latest') return p.logEnd;
  if (!/^\d+$/.test(to)) throw new Error(`--to must be earliest, latest or an offset (got ${JSON.stringify(to)})`);
  const n = BigInt(to);
  if (n < p.logStart || n > p.logEnd) throw new Error(`--to ${n} is outside partition ${p.partition}'s log ${p.logStart}..${p.logEnd}`);
  return n;
}
