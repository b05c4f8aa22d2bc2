/**
 * Info lines while the projection works through a backlog: one every `everyMs` with the events
 * applied, the rate and what is left per partition, and one when it has caught up. A backlog gone
 * within `everyMs` (live traffic, a short restart) says nothing, so a healthy service stays quiet.
 */
export class CatchUpLog {
  private readonly behind = new Map<number, bigint>();
  private startedAt?: number;
  private applied = 0;
  private lastLineAt = 0;
  private said = false;

  constructor(
    private readonly write: (line: Record<string, unknown>) => void,
    private readonly everyMs = 10_000,
    private readonly now: () => number = Date.now,
  ) {}

  /** After a batch is committed: how many events it held, the partition's next offset and where its log ends. */
  batchApplied(partition: number, events: number, nextOffset: bigint, logEnd: bigint): void {
    this.behind.set(partition, logEnd > nextOffset ? logEnd - nextOffset : 0n);
    const left = [...this.behind.values()].reduce((a, b) => a + b, 0n);
    const t = this.now();
    if (this.startedAt === undefined) {
      if (left === 0n) return;
      this.startedAt = t;
      this.lastLineAt = t;
      this.applied = events;
      this.said = false;
      return;
    }
    this.applied += events;
    const seconds = (t - this.startedAt) / 1000;
    if (left === 0n) {
      if (this.said) this.write({ msg: 'caught up', eventsApplied: this.applied, seconds: Math.round(seconds) });
      this.startedAt = undefined;
      return;
    }
    if (t - this.lastLineAt < this.everyMs) return;
    this.lastLineAt = t;
    this.said = true;
    const eventsLeft = Object.fromEntries([...this.behind].filter(([, n]) => n > 0n).map(([p, n]) => [p, Number(n)]));
    this.write({ msg: 'catching up', eventsApplied: this.applied, eventsPerSecond: Math.round(this.applied / seconds), eventsLeft });
  }

  /** A partition no longer this instance's (rebalance): its backlog is someone else's to report. */
  forget(partition: number): void {
    this.behind.delete(partition);
  }
}
