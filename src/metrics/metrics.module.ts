import { Controller, Get, Global, Header, Inject, Module } from '@nestjs/common';
import { ModuleRef } from '@nestjs/core';
import { ApiExcludeController } from '@nestjs/swagger';
import { DataSource } from 'typeorm';
import { ReadReplicas } from '../database/read-replicas.js';
import { APP_CONFIG, type AppConfig } from '../config/app-config.js';
import { CONSUMER_STATUS, type ConsumerStatus } from '../health/consumer-status.js';
import { webhooksSql } from '../webhooks/webhooks.sql.js';
import { Metrics, type RebuildProgress } from './metrics.js';
import { NewestEventClock } from './newest-event-clock.js';

export const METRICS = Symbol('METRICS');

@ApiExcludeController()
@Controller()
class MetricsController {
  constructor(@Inject(METRICS) private readonly metrics: Metrics) {}

  @Get('metrics')
  @Header('content-type', 'text/plain; version=0.0.4; charset=utf-8')
  scrape(): Promise<string> {
    return this.metrics.registry.metrics();
  }
}

function consumerStatus(refs: ModuleRef): ConsumerStatus | undefined {
  try {
    return refs.get<ConsumerStatus>(CONSUMER_STATUS, { strict: false });
  } catch {
    return undefined; // API-only instance
  }
}

/**
 * Lag per partition. While the broker cannot be asked for its log end, the last known ends are
 * used and the series is flagged stale, so the lag stays visible through an outage.
 */
function lagCollector(db: DataSource, refs: ModuleRef) {
  let lastEnds = new Map<number, bigint>();
  let stale = false;
  return {
    async lag() {
      const consumer = consumerStatus(refs);
      if (!consumer) return { lags: [], stale: false };
      try {
        lastEnds = await consumer.endOffsets();
        stale = false;
      } catch {
        stale = true;
      }
      const stored = (await db.query('SELECT partition, next_offset::text AS next_offset FROM read_model.projection_offsets WHERE topic = $1', [
        consumer.topic,
      ])) as {
        partition: number;
        next_offset: string;
      }[];
      const at = new Map(stored.map((r) => [r.partition, BigInt(r.next_offset)]));
      return { lags: [...lastEnds].map(([partition, end]) => ({ topic: consumer.topic, partition, lag: Number(end - (at.get(partition) ?? 0n)) })), stale };
    },
  };
}

async function rebuildProgress(db: DataSource): Promise<RebuildProgress[]> {
  const running: { id: string; kind: string; schema_name: string; target_offsets: Record<string, string> }[] = await db.query(
    `SELECT id::text, kind, schema_name, target_offsets FROM public.rebuilds WHERE status = 'running'`,
  );
  const out: RebuildProgress[] = [];
  for (const r of running) {
    const target = Object.values(r.target_offsets).reduce((a, o) => a + Number(o), 0);
    const [{ n }] = await db.query(`SELECT coalesce(sum(next_offset), 0)::text AS n FROM ${r.schema_name}.projection_offsets`).catch(() => [{ n: '0' }]);
    out.push({ kind: r.kind, id: r.id, schema: r.schema_name, projected: Number(n), target });
  }
  return out;
}

@Global()
@Module({
  controllers: [MetricsController],
  providers: [
    NewestEventClock,
    {
      provide: METRICS,
      // The consumer is looked up at scrape time: it depends (through the projector) on these metrics.
      inject: [DataSource, NewestEventClock, ModuleRef, APP_CONFIG, ReadReplicas],
      useFactory: (db: DataSource, clock: NewestEventClock, refs: ModuleRef, config: AppConfig, reads: ReadReplicas) => {
        const lag = lagCollector(db, refs);
        return new Metrics(
          {
            lag: () => lag.lag(),
            consumer: () => consumerStatus(refs)?.health(),
            newestEventTime: () => clock.newest,
            rebuild: () => rebuildProgress(db),
            replicas: async () => {
              if (!reads.configured) return [];
              await reads.probe();
              return reads.replicas();
            },
            webhookBacklog: async () =>
              ((await db.query(webhooksSql.oldestPending)) as { app_id: string; age: number }[]).map((r) => ({ app: r.app_id, ageSeconds: r.age })),
          },
          { perApp: config.metricsPerApp },
        );
      },
    },
  ],
  exports: [METRICS, NewestEventClock],
})
export class MetricsModule {}
