import { Controller, Get, Inject, Logger, Optional, ServiceUnavailableException } from '@nestjs/common';
import { ApiExcludeController } from '@nestjs/swagger';
import { HealthCheck, HealthCheckService, HealthIndicatorService } from '@nestjs/terminus';
import { InjectDataSource } from '@nestjs/typeorm';
import { DataSource } from 'typeorm';
import { MIGRATIONS } from '../database/data-source-options.js';
import { DATABASE_SERVER } from '../database/database.module.js';
import type { DatabaseServer } from '../database/database-server.js';
import { ReadReplicas } from '../database/read-replicas.js';
import { CONSUMER_STATUS, type ConsumerStatus } from './consumer-status.js';

@ApiExcludeController()
@Controller('health')
export class HealthController {
  private readonly logger = new Logger('health');
  private lastDatabaseError?: string;

  constructor(
    private readonly health: HealthCheckService,
    private readonly indicator: HealthIndicatorService,
    @InjectDataSource() private readonly db: DataSource,
    @Inject(DATABASE_SERVER) private readonly server: DatabaseServer,
    private readonly reads: ReadReplicas,
    @Optional() @Inject(CONSUMER_STATUS) private readonly consumer?: ConsumerStatus,
  ) {}

  /**
   * The process answers. Fails only when the embedded PostgreSQL this process owns died and could
   * not be brought back: then a restart of the whole service is what helps.
   */
  @Get('live')
  live() {
    const embedded = this.server.health?.();
    if (embedded?.state === 'failed') throw new ServiceUnavailableException({ status: 'down', reason: embedded.reason });
    return { status: 'ok' };
  }

  /**
   * Database reachable with every migration applied, and the projection consumer running; when not,
   * the consumer's state and reason (docs/operations.md says what each means and what to do). With
   * DATABASE_READ_URL, at least one replica taking reads (answering, within DATABASE_READ_MAX_LAG).
   */
  @Get('ready')
  @HealthCheck()
  ready() {
    return this.health.check([
      async () => {
        const check = this.indicator.check('database');
        const embedded = this.server.health?.();
        if (embedded && embedded.state !== 'up') return check.down({ embedded: embedded.state, reason: embedded.reason });
        try {
          const rows: { name: string }[] = await this.db.query('SELECT name FROM migrations');
          const applied = new Set(rows.map((r) => r.name));
          const pending = MIGRATIONS.map((m) => m.name).filter((name) => !applied.has(name));
          return pending.length === 0 ? check.up() : check.down({ pendingMigrations: pending });
        } catch (error) {
          // Readiness is unauthenticated: the driver's words (hosts, users, paths) go to the log, once per cause.
          const cause = (error as Error).message;
          if (cause !== this.lastDatabaseError) this.logger.warn(`readiness: the database check failed: ${cause}`);
          this.lastDatabaseError = cause;
          return check.down({ reason: 'PostgreSQL does not answer (the log says why)' });
        }
      },
      async () => {
        const check = this.indicator.check('consumer');
        if (!this.consumer) return check.up({ state: 'disabled' });
        const { state, reason, blocked, stuck } = this.consumer.health();
        const detail = { state, ...(reason ? { reason } : {}), ...(blocked ? { blocked } : {}), ...(stuck ? { stuck } : {}) };
        return state === 'running' ? check.up(detail) : check.down(detail);
      },
      ...(this.reads.configured
        ? [
            async () => {
              const check = this.indicator.check('replicas');
              await this.reads.probe();
              const replicas = this.reads.replicas();
              return replicas.some((r) => r.inRotation) ? check.up({ replicas }) : check.down({ replicas });
            },
          ]
        : []),
    ]);
  }
}
