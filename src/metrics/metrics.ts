import { Counter, Gauge, Histogram, Registry, collectDefaultMetrics } from 'prom-client';
import { PACKAGE_VERSION } from '../common/package-version.js';
import type { ReplicaState } from '../database/read-replicas.js';
import type { ConsumerHealth, ConsumerState } from '../health/consumer-status.js';

/** Every metric name starts with this, so the service's series are found and kept apart from others. */
export const PREFIX = 'subscription_records_';

const CONSUMER_STATES: ConsumerState[] = ['connecting', 'running', 'retrying', 'stuck', 'blocked', 'crashed', 'stopped'];

/** Every metric the service exposes at /metrics, on one registry per application instance. */
export class Metrics {
  readonly registry = new Registry();

  readonly httpDuration = new Histogram({
    name: 'subscription_records_http_request_duration_seconds',
    help: 'HTTP request duration by route and status',
    labelNames: ['method', 'route', 'status'] as const,
    buckets: [0.001, 0.002, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5],
    registers: [this.registry],
  });

  readonly eventsProjected = new Counter({
    name: 'subscription_records_projection_events_total',
    help: 'Events read by the live projection, by type and outcome (applied, dead_letter)',
    labelNames: ['type', 'outcome'] as const,
    registers: [this.registry],
  });

  readonly deadLetters = new Counter({
    name: 'subscription_records_projection_dead_letters_total',
    help: 'Messages sent to the dead letters, by reason code',
    labelNames: ['code'] as const,
    registers: [this.registry],
  });

  readonly batchSize = new Histogram({
    name: 'subscription_records_projection_batch_events',
    help: 'Messages per projected batch',
    buckets: [1, 10, 50, 100, 500, 1000, 2500, 5000, 10000, 25000],
    registers: [this.registry],
  });

  readonly batchDuration = new Histogram({
    name: 'subscription_records_projection_batch_duration_seconds',
    help: 'Time to project one batch (one database transaction)',
    buckets: [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10],
    registers: [this.registry],
  });

  readonly batchFailures = new Counter({
    name: 'subscription_records_projection_batch_failures_total',
    help: 'Batches that failed and were retried',
    registers: [this.registry],
  });

  readonly storeNotifications = new Counter({
    name: 'subscription_records_store_notifications_total',
    help: 'Store notifications received, by store, notification type and outcome (published, acknowledged: nothing to publish, refused: 4xx, retry: 5xx)',
    labelNames: ['store', 'type', 'outcome'] as const,
    registers: [this.registry],
  });

  readonly storeNotificationDelay = new Histogram({
    name: 'subscription_records_store_notification_delay_seconds',
    help: "Time from a store notification's own time (Apple's signedDate, Google's eventTimeMillis) to its arrival at the endpoint, by store",
    labelNames: ['store'] as const,
    buckets: [1, 5, 15, 60, 300, 900, 3600, 4 * 3600, 24 * 3600, 3 * 24 * 3600],
    registers: [this.registry],
  });

  readonly reconcileDrift = new Counter({
    name: 'subscription_records_reconcile_drift_total',
    help: 'Subscriptions the reconciler found the read models wrong about and healed, by kind (missed_renewal, missed_expiry, missed_refund, wrong_intent, other)',
    labelNames: ['kind'] as const,
    registers: [this.registry],
  });

  readonly reconcileChecked = new Counter({
    name: 'subscription_records_reconcile_checked_total',
    help: 'Subscriptions the scheduled reconciliation asked the store about, by why (renewal_overdue, retry_overdue, pending_overdue, sample, voided)',
    labelNames: ['reason'] as const,
    registers: [this.registry],
  });

  readonly storeApiCalls = new Counter({
    name: 'subscription_records_store_api_calls_total',
    help: 'Requests the reconciler sent to the store APIs, by store and outcome (ok, rate_limited: 429, error: 5xx, network or another 4xx)',
    labelNames: ['store', 'outcome'] as const,
    registers: [this.registry],
  });

  readonly webhookDeliveries = new Counter({
    name: 'subscription_records_webhook_deliveries_total',
    help: 'Webhook delivery attempts by outcome: delivered, retry (failed, will be tried again), failed (given up after WEBHOOK_MAX_AGE)',
    labelNames: ['outcome'] as const,
    registers: [this.registry],
  });

  readonly webhookAttemptDuration = new Histogram({
    name: 'subscription_records_webhook_attempt_duration_seconds',
    help: 'Time from sending a webhook to its response (or timeout), by outcome',
    labelNames: ['outcome'] as const,
    buckets: [0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30],
    registers: [this.registry],
  });

  constructor(
    collectors: {
      lag(): Promise<{ lags: { topic: string; partition: number; lag: number }[]; stale: boolean }>;
      consumer(): ConsumerHealth | undefined;
      newestEventTime(): number | undefined;
      rebuild(): Promise<RebuildProgress[]>;
      webhookBacklog?(): Promise<{ app: string; ageSeconds: number }[]>;
      replicas?(): Promise<readonly ReplicaState[]>;
    },
    options: { perApp?: boolean } = {},
  ) {
    collectDefaultMetrics({ register: this.registry, prefix: PREFIX });
    new Gauge({
      name: `${PREFIX}build_info`,
      help: 'Always 1; the labels say which build and runtime serve',
      labelNames: ['version', 'node_version'] as const,
      registers: [this.registry],
    }).set({ version: PACKAGE_VERSION, node_version: process.version }, 1);
    // One lag reading per scrape feeds both gauges.
    let lagReading: Promise<{ lags: { topic: string; partition: number; lag: number }[]; stale: boolean }> | undefined;
    const readLag = () =>
      (lagReading ??= collectors
        .lag()
        .catch(() => ({ lags: [], stale: true }))
        .finally(() => setTimeout(() => (lagReading = undefined), 100)));
    new Gauge({
      name: 'subscription_records_projection_consumer_lag_messages',
      help: 'Log end offset minus the offset stored with the read models, per partition (last known ends while the broker is away)',
      labelNames: ['topic', 'partition'] as const,
      registers: [this.registry],
      async collect() {
        this.reset();
        for (const l of (await readLag()).lags) this.set({ topic: l.topic, partition: String(l.partition) }, l.lag);
      },
    });
    new Gauge({
      name: 'subscription_records_projection_consumer_lag_stale',
      help: '1 when the log end offsets behind subscription_records_projection_consumer_lag_messages could not be read this scrape (broker unreachable)',
      registers: [this.registry],
      async collect() {
        this.set((await readLag()).stale ? 1 : 0);
      },
    });
    new Gauge({
      name: 'subscription_records_projection_consumer_state',
      help: 'The live consumer state: 1 on the current state, 0 on the others (docs/operations.md)',
      labelNames: ['state'] as const,
      registers: [this.registry],
      collect() {
        this.reset();
        const health = collectors.consumer();
        if (!health) return;
        for (const state of CONSUMER_STATES) this.set({ state }, health.state === state ? 1 : 0);
      },
    });
    new Gauge({
      name: 'subscription_records_projection_partition_blocked',
      help: '1 for each partition not consumed because its stored offset lies outside the log (see /health/ready)',
      labelNames: ['partition'] as const,
      registers: [this.registry],
      collect() {
        this.reset();
        for (const b of collectors.consumer()?.blocked ?? []) this.set({ partition: String(b.partition) }, 1);
      },
    });
    new Gauge({
      name: 'subscription_records_projection_partition_stuck',
      help: '1 for each partition whose batch PostgreSQL refuses in a way retrying cannot cure, by SQLSTATE (see /health/ready)',
      labelNames: ['partition', 'code'] as const,
      registers: [this.registry],
      collect() {
        this.reset();
        for (const s of collectors.consumer()?.stuck ?? []) this.set({ partition: String(s.partition), code: s.code }, 1);
      },
    });
    new Gauge({
      name: 'subscription_records_projection_newest_event_age_seconds',
      help: 'Age of the newest event time projected by this instance',
      registers: [this.registry],
      collect() {
        const newest = collectors.newestEventTime();
        if (newest !== undefined) this.set((Date.now() - newest) / 1000);
      },
    });
    // /metrics is unauthenticated: an application id (a tenant) is a label only when the operator
    // asks for it (METRICS_PER_APP=true, docs/operations.md); by default one series over all of them.
    const backlog = async () => (await collectors.webhookBacklog?.().catch(() => [])) ?? [];
    if (options.perApp) {
      new Gauge({
        name: 'subscription_records_webhook_oldest_pending_delivery_seconds',
        help: 'Age of the oldest webhook delivery not yet delivered, per application (METRICS_PER_APP=true)',
        labelNames: ['app'] as const,
        registers: [this.registry],
        async collect() {
          this.reset();
          for (const b of await backlog()) this.set({ app: b.app }, b.ageSeconds);
        },
      });
    } else {
      new Gauge({
        name: 'subscription_records_webhook_oldest_pending_delivery_seconds',
        help: 'Age of the oldest webhook delivery not yet delivered, over all applications (0: none pending; per application with METRICS_PER_APP=true)',
        registers: [this.registry],
        async collect() {
          this.set(Math.max(0, ...(await backlog()).map((b) => b.ageSeconds)));
        },
      });
    }
    // Read replicas (DATABASE_READ_URL) by position in the list, never by host: /metrics is unauthenticated.
    let replicaReading: Promise<readonly ReplicaState[]> | undefined;
    const readReplicas = () =>
      (replicaReading ??= (collectors.replicas?.() ?? Promise.resolve([])).catch(() => []).finally(() => setTimeout(() => (replicaReading = undefined), 100)));
    new Gauge({
      name: 'subscription_records_database_replica_lag_seconds',
      help: 'How long ago the primary committed the last transaction a read replica has replayed, while it has WAL left to replay (0: caught up), per DATABASE_READ_URL entry (1-based); absent while it does not answer',
      labelNames: ['replica'] as const,
      registers: [this.registry],
      async collect() {
        this.reset();
        for (const r of await readReplicas()) if (r.lagSeconds !== undefined) this.set({ replica: String(r.replica) }, r.lagSeconds);
      },
    });
    new Gauge({
      name: 'subscription_records_database_replica_in_rotation',
      help: "1 when a read replica takes this instance's reads (it answers and lags at most DATABASE_READ_MAX_LAG), per DATABASE_READ_URL entry",
      labelNames: ['replica'] as const,
      registers: [this.registry],
      async collect() {
        this.reset();
        for (const r of await readReplicas()) this.set({ replica: String(r.replica) }, r.inRotation ? 1 : 0);
      },
    });
    // No rebuild id label: one series per kind of generation, not one per rebuild ever run.
    const labels = ['kind', 'schema'] as const;
    new Gauge({
      name: 'subscription_records_rebuild_progress_ratio',
      help: 'Share of the target offsets a running rebuild or verify has projected (0..1)',
      labelNames: labels,
      registers: [this.registry],
      async collect() {
        this.reset();
        for (const r of await collectors.rebuild().catch(() => []))
          this.set({ kind: r.kind, schema: r.schema }, r.target > 0 ? Math.min(1, r.projected / r.target) : 1);
      },
    });
    new Gauge({
      name: 'subscription_records_rebuild_projected_events',
      help: 'Events a running rebuild or verify has projected so far, and its target',
      labelNames: [...labels, 'of'] as const,
      registers: [this.registry],
      async collect() {
        this.reset();
        for (const r of await collectors.rebuild().catch(() => [])) {
          this.set({ kind: r.kind, schema: r.schema, of: 'projected' }, r.projected);
          this.set({ kind: r.kind, schema: r.schema, of: 'target' }, r.target);
        }
      },
    });
  }
}

export type RebuildProgress = { kind: string; id: string; schema: string; projected: number; target: number };
