import type { Logger } from '@nestjs/common';

/**
 * Runs `run` now and every `everyMs`, never two at once (a tick while one is in flight is skipped).
 * A failure is logged and the next tick retries. `stop()` ends the ticks and waits for one in
 * flight: callers stop in beforeApplicationShutdown, before Nest's onApplicationShutdown hooks close
 * the database pool under it. The timer does not keep the process alive.
 */
export class PeriodicTask {
  private timer?: NodeJS.Timeout;
  private running?: Promise<void>;

  constructor(
    private readonly logger: Logger,
    private readonly failure: string,
    private readonly run: () => Promise<unknown>,
  ) {}

  start(everyMs: number): void {
    const tick = () => {
      this.running ??= this.run()
        .then(
          () => undefined,
          (error: unknown) => this.logger.warn({ msg: this.failure, error: (error as Error).message }),
        )
        .finally(() => (this.running = undefined));
    };
    this.timer = setInterval(tick, everyMs);
    this.timer.unref();
    tick();
  }

  async stop(): Promise<void> {
    clearInterval(this.timer);
    await this.running;
  }
}
