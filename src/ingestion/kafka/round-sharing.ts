/** How long after a partition last had live traffic backlog batches still share rounds. */
const LIVE_RECENT_MS = 3000;

/**
 * kafkajs fetches again only once every batch of a fetch is applied, so a partition with live
 * traffic waits for a whole round of backlog batches (up to KAFKA_MAX_BYTES_PER_PARTITION each,
 * seconds at a time). While some partition has had live traffic within the last seconds, a backlog
 * batch applies only its first `share` messages per round; the rest is fetched again. With no live
 * partition, batches apply whole (throughput mode). bench/notes.md has the figures.
 */
export class RoundSharing {
  private liveSeenAt = Number.NEGATIVE_INFINITY;
  /** Partitions whose last batch ended at their head. */
  private readonly atHead = new Set<number>();

  constructor(private readonly share: number) {}

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
    return now - this.liveSeenAt < LIVE_RECENT_MS ? messages.slice(0, this.share) : messages;
  }
}
