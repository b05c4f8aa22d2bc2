import { Controller, Get, Inject, Optional } from '@nestjs/common';
import { ApiExcludeController } from '@nestjs/swagger';
import { HealthCheck, HealthCheckService, HealthIndicatorService } from '@nestjs/terminus';
import { InjectDataSource } from '@nestjs/typeorm';
import { DataSource } from 'typeorm';
import { MIGRATIONS } from '../database/data-source-options.js';
import { CONSUMER_STATUS, type ConsumerStatus } from './consumer-status.js';

@ApiExcludeController()
@Controller('health')
export class HealthController {
  constructor(
    private readonly health: HealthCheckService,
    private readonly indicator: HealthIndicatorService,
    @InjectDataSource() private readonly db: DataSource,
    @Optional() @Inject(CONSUMER_STATUS) private readonly consumer?: ConsumerStatus,
  ) {}

  /** The process answers; nothing else is checked. */
  @Get('live')
  live() {
    return { status: 'ok' };
  }

  /** Database reachable with every migration applied, and the projection consumer running. */
  @Get('ready')
  @HealthCheck()
  ready() {
    return this.health.check([
      async () => {
        const check = this.indicator.check('database');
        try {
          const rows: { name: string }[] = await this.db.query('SELECT name FROM migrations');
          const applied = new Set(rows.map((r) => r.name));
          const pending = MIGRATIONS.map((m) => m.name).filter((name) => !applied.has(name));
          return pending.length === 0 ? check.up() : check.down({ pendingMigrations: pending });
        } catch (error) {
          return check.down({ message: (error as Error).message });
        }
      },
      async () => {
        const check = this.indicator.check('consumer');
        if (!this.consumer) return check.up({ state: 'disabled' });
        const state = this.consumer.state();
        return state === 'running' ? check.up({ state }) : check.down({ state });
      },
    ]);
  }
}
