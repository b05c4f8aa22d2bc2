import { BeforeApplicationShutdown, Injectable, Logger, OnApplicationBootstrap } from '@nestjs/common';
import { InjectDataSource } from '@nestjs/typeorm';
import { DataSource } from 'typeorm';
import { Clock } from '../common/clock.js';
import { sweepStatuses } from '../projection/sweep-statuses.js';

/**
 * How often the status watermarks move. Readers add the customers whose status changed since the
 * watermark (a minute's worth of access ends), so this bounds their work, not their correctness.
 */
export const STATUS_SWEEP_MS = 60_000;

/** Keeps customer_status_days close to the clock on every consuming instance (docs/api.md, "How the pages stay fast"). */
@Injectable()
export class StatusSweeper implements OnApplicationBootstrap, BeforeApplicationShutdown {
  private readonly logger = new Logger('status-sweeper');
  private timer?: NodeJS.Timeout;
  private running?: Promise<void>;

  constructor(
    @InjectDataSource() private readonly db: DataSource,
    private readonly clock: Clock,
  ) {}

  onApplicationBootstrap(): void {
    const tick = () => {
      this.running ??= sweepStatuses(this.db, this.clock.now())
        .then(
          () => undefined,
          (error: unknown) => this.logger.warn({ msg: 'moving the status watermarks failed; the next sweep retries', error: (error as Error).message }),
        )
        .finally(() => (this.running = undefined));
    };
    this.timer = setInterval(tick, STATUS_SWEEP_MS);
    this.timer.unref();
    tick(); // a restart after a long stop leaves the counts far behind the clock
  }

  /** Before Nest's onApplicationShutdown hooks, which close the database pool under a sweep in flight. */
  async beforeApplicationShutdown(): Promise<void> {
    clearInterval(this.timer);
    await this.running;
  }
}
