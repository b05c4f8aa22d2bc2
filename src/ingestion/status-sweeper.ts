import { BeforeApplicationShutdown, Injectable, Logger, OnApplicationBootstrap } from '@nestjs/common';
import { InjectDataSource } from '@nestjs/typeorm';
import { DataSource } from 'typeorm';
import { Clock } from '../common/clock.js';
import { PeriodicTask } from '../common/periodic-task.js';
import { sweepStatuses } from '../projection/sweep-statuses.js';

/**
 * How often the status watermarks move. Readers add the customers whose status changed since the
 * watermark (a minute's worth of access ends), so this bounds their work, not their correctness.
 */
export const STATUS_SWEEP_MS = 60_000;

/** Keeps customer_status_days close to the clock on every consuming instance (docs/api.md, "How the pages stay fast"). */
@Injectable()
export class StatusSweeper implements OnApplicationBootstrap, BeforeApplicationShutdown {
  private readonly sweeps = new PeriodicTask(new Logger('status-sweeper'), 'moving the status watermarks failed; the next sweep retries', () =>
    sweepStatuses(this.db, this.clock.now()),
  );

  constructor(
    @InjectDataSource() private readonly db: DataSource,
    private readonly clock: Clock,
  ) {}

  /** At once too: a restart after a long stop leaves the counts far behind the clock. */
  onApplicationBootstrap(): void {
    this.sweeps.start(STATUS_SWEEP_MS);
  }

  async beforeApplicationShutdown(): Promise<void> {
    await this.sweeps.stop();
  }
}
