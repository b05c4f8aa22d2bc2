import { Global, Inject, Injectable, Logger, Module, type OnApplicationShutdown, type OnModuleInit } from '@nestjs/common';
import { InjectDataSource } from '@nestjs/typeorm';
import pg from 'pg';
import { DataSource } from 'typeorm';
import { APP_CONFIG, type AppConfig } from '../config/app-config.js';
import type { Queryable } from './prepared.js';

/** How often each replica's lag is read (also on every readiness probe and scrape). */
const PROBE_MS = 2_000;

/**
 * Lag as PostgreSQL's documentation measures it on a standby: how long ago the primary committed the
 * last transaction replayed here, while WAL received is still waiting to be replayed (0 when all of
 * it is: an idle primary is not lag). Not a standby (promoted, or a primary listed by mistake): 0.
 */
const LAG_SQL = `SELECT
  CASE WHEN NOT pg_is_in_recovery() OR pg_last_wal_receive_lsn() IS NOT DISTINCT FROM pg_last_wal_replay_lsn() THEN 0
       ELSE greatest(0, extract(epoch FROM clock_timestamp() - pg_last_xact_replay_timestamp()))::float8 END AS lag`;

export type ReplicaState = {
  /** 1-based, in DATABASE_READ_URL order (no host names: /metrics and /health/ready are unauthenticated). */
  replica: number;
  /** The last lag read, in seconds; undefined while the replica does not answer. */
  lagSeconds?: number;
  /** Taking reads: it answers, and lags at most DATABASE_READ_MAX_LAG. */
  inRotation: boolean;
};

/**
 * Where the read endpoints (GET /v2/customers, /v2/transactions) run their statements: the
 * primary's pool, or with DATABASE_READ_URL, one replica per request, in turn, among those in
 * rotation; the primary when none is (the answers stay right, and readiness fails so the instance
 * leaves the load balancer). Everything else (projection, webhooks, erasure, migrations, rebuilds,
 * health, metrics) uses the primary. One request uses one server for all its statements: a page
 * and its total, or a feed page and the mark it started from, come from the same state.
 */
@Injectable()
export class ReadReplicas implements OnModuleInit, OnApplicationShutdown {
  private readonly logger = new Logger('read-replicas');
  private readonly pools: pg.Pool[];
  private readonly states: ReplicaState[];
  private readonly maxLagSeconds?: number;
  private next = 0;
  private timer?: NodeJS.Timeout;
  private probing?: Promise<void>;

  constructor(
    @InjectDataSource() private readonly primary: DataSource,
    @Inject(APP_CONFIG) config: AppConfig,
  ) {
    this.pools = config.databaseReadUrls.map(
      (url) =>
        new pg.Pool({
          connectionString: url,
          max: 10,
          connectionTimeoutMillis: 5000,
          application_name: 'subscription-records (reads)',
          statement_timeout: config.statementTimeoutMs,
        }),
    );
    // A pool's idle connection dropping (a replica restarting) must not crash the process.
    for (const pool of this.pools) pool.on('error', () => undefined);
    this.states = this.pools.map((_, i) => ({ replica: i + 1, inRotation: false }));
    this.maxLagSeconds = config.databaseReadMaxLagMs === undefined ? undefined : config.databaseReadMaxLagMs / 1000;
  }

  get configured(): boolean {
    return this.pools.length > 0;
  }

  async onModuleInit(): Promise<void> {
    if (!this.configured) return;
    await this.probe();
    this.timer = setInterval(() => void this.probe(), PROBE_MS);
    this.timer.unref();
  }

  async onApplicationShutdown(): Promise<void> {
    clearInterval(this.timer);
    await this.probing;
    await Promise.all(this.pools.map((p) => p.end()));
  }

  /** The server for one request's statements. */
  pick(): Queryable {
    const ready = this.states.filter((s) => s.inRotation);
    if (ready.length === 0) return this.primary;
    const chosen = ready[this.next++ % ready.length];
    return this.pools[chosen.replica - 1];
  }

  /** Reads every replica's lag now (shared with a probe already under way). */
  probe(): Promise<void> {
    this.probing ??= Promise.all(this.pools.map((pool, i) => this.probeOne(pool, this.states[i]))).then(() => {
      this.probing = undefined;
    });
    return this.probing;
  }

  /** The replicas as last probed. */
  replicas(): readonly ReplicaState[] {
    return this.states.map((s) => ({ ...s }));
  }

  private async probeOne(pool: pg.Pool, state: ReplicaState): Promise<void> {
    const was = state.inRotation;
    try {
      const { rows } = await pool.query<{ lag: number }>(LAG_SQL);
      state.lagSeconds = Number(rows[0].lag);
      state.inRotation = this.maxLagSeconds === undefined || state.lagSeconds <= this.maxLagSeconds;
    } catch (error) {
      state.lagSeconds = undefined;
      state.inRotation = false;
      if (was) this.logger.warn(`read replica ${state.replica} does not answer (${(error as Error).message}); its reads go elsewhere`);
    }
    if (was && !state.inRotation && state.lagSeconds !== undefined) {
      this.logger.warn(`read replica ${state.replica} lags ${state.lagSeconds.toFixed(1)} s, over DATABASE_READ_MAX_LAG; its reads go elsewhere`);
    } else if (!was && state.inRotation) {
      this.logger.log(`read replica ${state.replica} takes reads (lag ${state.lagSeconds!.toFixed(1)} s)`);
    }
  }
}

@Global()
@Module({ providers: [ReadReplicas], exports: [ReadReplicas] })
export class ReadReplicasModule {}
