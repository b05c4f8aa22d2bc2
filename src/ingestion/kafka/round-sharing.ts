/** How long after a partition last had live traffic backlog batches still share rounds. */
const LIVE_RECENT_MS = 3000;
/** How long after an assignment rounds are shared before any partition was seen at its head twice. */
const ASSIGNED_PROBE_MS = 1000;

/**
 * kafkajs fetches again only once every batch of a fetch is applied, so a partition with live
 * traffic waits for a whole round of backlog batches (up to KAFKA_MAX_BYTES_PER_PARTITION each,
 * seconds at a time). While some partition has had live traffic within the last seconds, a backlog
 * batch applies only its first `share` messages per round; the consumer holds the rest, its
 * partition paused, and applies it in shares beside the rounds. With no live partition, batches
 * apply whole (throughput mode). bench/notes.md has the figures.
 */
export class RoundSharing {
  private liveSeenAt = Number.NEGATIVE_INFINITY;
  /** Partitions whose last batch ended at their head. */
  private readonly atHead = new Set<number>();

  constructor(private readonly share: number) {}

  /**
   * Partitions were (re)assigned: until a partition has been at its head twice, live traffic
   * cannot be told from none, so the first second shares as if there were (a restart under a
   * backlog would otherwise apply whole backlog batches before the first live event).
   */
  assigned(now = Date.now()): void {
    this.atHead.clear();
    this.liveSeenAt = now - LIVE_RECENT_MS + ASSIGNED_PROBE_MS;
  }

  /** Whether some partition has had live traffic within the last seconds. */
  isLive(now = Date.now()): boolean {
    return now - this.liveSeenAt < LIVE_RECENT_MS;
  }

  /** The messages of this fetched batch to apply in this round. */
  take<M extends { offset: string }>(batch: { partition: number; highWatermark: string }, messages: M[], now = Date.now()): M[] {
    if (messages.length === 0) return messages;
    const lag = BigInt(batch.highWatermark) - BigInt(messages[messages.length - 1].offset) - 1n;
    if (lag <= BigInt(this.share)) {
      // At the head twice in a row is live traffic; the batch that drains a backlog is not, so
      // partitions finishing an import one after another do not throttle the rest.
      if (this.atHead.has(batch.partition)) this.liveSeenAt = now;
      this.atHead.add(batch.partition);
      return messages;
    }
    this.atHead.delete(batch.partition);
    return this.isLive(now) ? messages.slice(0, this.share) : messages;
  }
}
