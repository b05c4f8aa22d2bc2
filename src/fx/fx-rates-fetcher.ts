import { FX_RATES_FETCH_LOCK } from '../database/advisory-locks.js';
import { BeforeApplicationShutdown, Inject, Injectable, Logger, OnApplicationBootstrap } from '@nestjs/common';
import { InjectDataSource } from '@nestjs/typeorm';
import { DataSource } from 'typeorm';
import { PeriodicTask } from '../common/periodic-task.js';
import { APP_CONFIG, type AppConfig } from '../config/app-config.js';
import { formatProblem, parseEcbRates } from './ecb-rates.js';
import { fetchRatesFile } from './fetch-rates-file.js';
import { loadRates, type LoadCounts } from './load-rates.js';
import { ratesFileText } from './rates-file.js';

/** Bad lines named in the log when a fetched file is refused; the rest are counted. */
const LOGGED_PROBLEMS = 5;

/** A fetched file that is no rates file, or has bad lines: nothing of it is loaded. */
export class FetchedRatesRefused extends Error {}

/**
 * Fetches FX_RATES_URL every FX_RATES_INTERVAL and loads it as `fx import` does (docs/exchange-rates.md):
 * one instance at a time, the whole file or nothing. A failed fetch or a bad file is logged and what
 * is loaded stays; the next interval tries again.
 */
@Injectable()
export class FxRatesFetcher implements OnApplicationBootstrap, BeforeApplicationShutdown {
  private readonly logger = new Logger('fx-rates');
  private readonly fetches = new PeriodicTask(this.logger, 'fetching exchange rates failed; the rates already loaded stay, the next fetch retries', () =>
    this.fetchOnce(),
  );
  private readonly abort = new AbortController();

  constructor(
    @Inject(APP_CONFIG) private readonly config: AppConfig,
    @InjectDataSource() private readonly db: DataSource,
  ) {}

  onApplicationBootstrap(): void {
    const every = this.config.fxRates?.intervalMs;
    if (every) this.fetches.start(every);
  }

  async beforeApplicationShutdown(): Promise<void> {
    this.abort.abort();
    await this.fetches.stop();
  }

  /** One fetch and load, if no other instance holds the lock (then undefined). */
  async fetchOnce(): Promise<LoadCounts | undefined> {
    const source = this.config.fxRates;
    if (!source) return undefined;
    const runner = this.db.createQueryRunner();
    await runner.connect();
    try {
      const [{ locked }] = (await runner.query('SELECT pg_try_advisory_lock($1) AS locked', [FX_RATES_FETCH_LOCK])) as { locked: boolean }[];
      if (!locked) return undefined;
      try {
        return await this.fetchAndLoad(source.url);
      } finally {
        await runner.query('SELECT pg_advisory_unlock($1)', [FX_RATES_FETCH_LOCK]);
      }
    } finally {
      await runner.release();
    }
  }

  private async fetchAndLoad(url: string): Promise<LoadCounts> {
    const bytes = await fetchRatesFile(url, { signal: this.abort.signal });
    let parsed;
    try {
      parsed = parseEcbRates(ratesFileText(bytes));
    } catch (error) {
      throw new FetchedRatesRefused(`FX_RATES_URL's file refused: ${(error as Error).message}`, { cause: error });
    }
    if (!parsed.ok) {
      const shown = parsed.problems.slice(0, LOGGED_PROBLEMS).map(formatProblem);
      const rest = parsed.problems.length - shown.length + parsed.more;
      throw new FetchedRatesRefused(
        `FX_RATES_URL's file refused, nothing of it loaded: ${shown.join('; ')}${rest > 0 ? `; and ${rest} more bad line(s)` : ''}`,
      );
    }
    const counts = await loadRates(this.db, parsed.rows);
    const summary = { days: parsed.days, currencies: parsed.currencies.length, from: parsed.firstDay, to: parsed.lastDay, ...counts };
    if (counts.inserted + counts.changed > 0) this.logger.log({ msg: 'exchange rates loaded', ...summary });
    else this.logger.debug({ msg: 'exchange rates unchanged', ...summary });
    return counts;
  }
}
