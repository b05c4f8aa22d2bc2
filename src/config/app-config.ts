import 'reflect-metadata';
import { plainToInstance } from 'class-transformer';
import { getMetadataStorage, validateSync } from 'class-validator';
import { AuthEnv } from './env/auth.env.js';
import { LoggingEnv } from './env/logging.env.js';
import { CryptoShreddingEnv } from './env/crypto-shredding.env.js';
import { DatabaseEnv } from './env/database.env.js';
import { EventsEnv } from './env/events.env.js';
import { HttpEnv } from './env/http.env.js';
import { ImportEnv } from './env/import.env.js';
import { applicationIdProblem } from '../common/application-id.js';
import { PurchasesEnv } from './env/purchases.env.js';
import { RevenueEnv } from './env/revenue.env.js';
import { commissionOf, type Commission } from '../revenue/commission.js';
import { StripeEnv } from './env/stripe.env.js';
import { IngestionEnv } from './env/ingestion.env.js';
import { KafkaEnv } from './env/kafka.env.js';
import { MetricsEnv } from './env/metrics.env.js';
import { AppleEnv } from './env/apple.env.js';
import { GoogleEnv } from './env/google.env.js';
import { WebhooksEnv } from './env/webhooks.env.js';
import { AppEnv } from './env/app.env.js';
import { FxEnv } from './env/fx.env.js';
import { ReconcileEnv } from './env/reconcile.env.js';
import { weakSecretReason } from './secret-strength.js';
import { appleSettings, googleSettings, stripeSettings, type AppleSettings, type GoogleSettings, type StripeSettings } from './store-settings.js';

export type { AppleApiKey, AppleApp, AppleSettings, GoogleSettings, StripeSettings } from './store-settings.js';

type EnvSlice = new () => object;

/**
 * Every environment variable the service reads, in one slice per module that reads them (each a
 * class of validated variables with their defaults, config/env/<module>.env.ts), parsed once at
 * boot. Problems are listed in this order. The slices sit here, not in their modules' folders: the
 * modules read the parsed AppConfig, so config stays below every module that reads it.
 */
const ENVIRONMENT: readonly EnvSlice[] = [
  AppEnv,
  HttpEnv,
  DatabaseEnv,
  AuthEnv,
  LoggingEnv,
  KafkaEnv,
  IngestionEnv,
  EventsEnv,
  MetricsEnv,
  CryptoShreddingEnv,
  WebhooksEnv,
  AppleEnv,
  ImportEnv,
  GoogleEnv,
  StripeEnv,
  PurchasesEnv,
  RevenueEnv,
  FxEnv,
  ReconcileEnv,
];
type Environment = AppEnv &
  HttpEnv &
  DatabaseEnv &
  AuthEnv &
  LoggingEnv &
  KafkaEnv &
  IngestionEnv &
  EventsEnv &
  MetricsEnv &
  CryptoShreddingEnv &
  WebhooksEnv &
  AppleEnv &
  ImportEnv &
  GoogleEnv &
  StripeEnv &
  PurchasesEnv &
  RevenueEnv &
  FxEnv &
  ReconcileEnv;

/**
 * The variables of each slice: its properties that carry a validation decorator (@IsOptional
 * counts), so an optional variable without a default is known although an instance has no value
 * for it. A name in two slices throws: the merged environment would keep only one of the values.
 */
export function variablesOf(slices: readonly EnvSlice[]): ReadonlyMap<EnvSlice, readonly string[]> {
  const owners = new Map<string, string>();
  const result = new Map<EnvSlice, string[]>();
  for (const slice of slices) {
    const names = [
      ...new Set(
        getMetadataStorage()
          .getTargetValidationMetadatas(slice, '', true, false)
          .map((m) => m.propertyName),
      ),
    ];
    for (const name of names) {
      const owner = owners.get(name);
      if (owner !== undefined) throw new Error(`${name} is a variable of both ${owner} and ${slice.name}`);
      owners.set(name, slice.name);
    }
    result.set(slice, names);
  }
  return result;
}

const SLICE_VARIABLES = variablesOf(ENVIRONMENT);

/** Prefixes of the variables this service owns: an unknown one of these is most likely a typo. */
const OWNED_PREFIXES = [
  'CORS_',
  'KAFKA_',
  'DATABASE_',
  'JWT_',
  'WEBHOOK_',
  'EMBEDDED_PG_',
  'PROJECTION_',
  'EVENT_',
  'APPLE_',
  'PURCHASE_',
  'STRIPE_',
  'GOOGLE_',
  'METRICS_',
  'IMPORT_',
  'FX_',
  'STORE_',
  'RECONCILE_',
];
/**
 * Every variable loadConfig reads, from the slices' validation metadata; deploy/kubernetes is
 * checked against it (test/deploy/kubernetes.spec.ts), and it against the README's table.
 */
export const KNOWN_VARIABLES: ReadonlySet<string> = new Set([...SLICE_VARIABLES.values()].flat());

/** One slice with its defaults, from the variables of `raw` that are its own; what is wrong with them goes to `problems`, by name. */
function validSlice(slice: EnvSlice, raw: Record<string, string | undefined>, problems: string[]): object {
  const own = Object.fromEntries(
    SLICE_VARIABLES.get(slice)!
      .filter((name) => raw[name] !== undefined)
      .map((name) => [name, raw[name]]),
  );
  const env = plainToInstance(slice, own, { exposeDefaultValues: true });
  for (const error of validateSync(env, { forbidUnknownValues: false })) {
    for (const message of Object.values(error.constraints ?? {})) {
      problems.push(message.startsWith(error.property) ? message : `${error.property}: ${message}`);
    }
  }
  return env;
}

export type KafkaSettings = {
  brokers: string[];
  topic: string;
  groupId: string;
  clientId: string;
  ssl: boolean;
  sessionTimeoutMs: number;
  maxBytesPerPartition: number;
  partitionsConcurrency: number;
  /** Messages a backlog batch applies per fetch round while another partition is at its head. */
  roundShareMessages: number;
  sasl?: { mechanism: 'plain' | 'scram-sha-256' | 'scram-sha-512'; username: string; password: string };
};

export type WebhookSettings = {
  deliveryEnabled: boolean;
  maxAgeMs: number;
  timeoutMs: number;
  retryBaseMs: number;
  maxInFlight: number;
  pollMs: number;
  /** Lower-case host names or IPs (no port) that may be targeted although internal, and over http. */
  allowHosts: readonly string[];
};

export type AppConfig = Readonly<{
  env: 'development' | 'production' | 'test';
  port: number;
  host: string;
  /** Origins (scheme://host[:port]) allowed by CORS; empty: CORS off. */
  corsOrigins: readonly string[];
  /** Unset means: run the embedded PostgreSQL under dataDir. */
  databaseUrl?: string;
  /** DATABASE_READ_URL: replicas the read endpoints use; empty: they read from the primary. */
  databaseReadUrls: readonly string[];
  /** DATABASE_READ_MAX_LAG; undefined: a replica takes reads whatever its lag. */
  databaseReadMaxLagMs?: number;
  dataDir: string;
  embeddedPgPort: number;
  jwt: Readonly<{ secret?: string; jwksUri?: string; issuer?: string; audience?: string }>;
  logLevel: string;
  logFormat: 'json' | 'pretty';
  /** Unset means: use the embedded event log table instead of Kafka. */
  kafka?: Readonly<KafkaSettings>;
  eventLogTopic: string;
  consumerEnabled: boolean;
  projectionBatchSize: number;
  /** Swagger UI at /docs; /openapi.json is always served. */
  docsUiEnabled: boolean;
  /** METRICS_PER_APP: /metrics labels series with application ids (off: no tenant id in /metrics). */
  metricsPerApp: boolean;
  /** CRYPTO_SHREDDING: store notifications and imports publish usernames sealed with a per-customer key. */
  cryptoShredding: boolean;
  eventTimeMaxSkewMs: number;
  /** EVENT_MAX_BYTES: the largest message (value and key) published, projected or copied to the .dlq. */
  eventMaxBytes: number;
  statementTimeoutMs: number;
  requestTimeoutMs: number;
  webhooks: Readonly<WebhookSettings>;
  /** Unset: POST /v2/notifications/apple/* answers 404. */
  apple?: AppleSettings;
  /** Unset: POST /v2/notifications/google/* answers 404. */
  google?: GoogleSettings;
  /** Unset: POST /v2/notifications/stripe/* answers 404. */
  stripe?: StripeSettings;
  /** IMPORT_CONCURRENCY: store requests `import` keeps in flight. */
  importConcurrency: number;
  purchases: Readonly<PurchaseSettings>;
  /** FX_RATES_URL and FX_RATES_INTERVAL; unset: exchange rates come from `fx import` only (docs/exchange-rates.md). */
  fxRates?: Readonly<FxRatesSettings>;
  /** STORE_COMMISSION: each app's commission rates per store, for proceeds (docs/revenue.md). */
  commission: Commission;
  /** RECONCILE_*: the reconciler's schedule (intervalMs unset: none) and what makes a subscription suspect (docs/operations.md). */
  reconcile: Readonly<ReconcileSettings>;
  /** Things worth saying at start-up that do not stop it (unknown variables of ours, by name). */
  warnings: readonly string[];
}>;

/** The reconciler (docs/operations.md, "Reconciliation"). */
export type ReconcileSettings = { intervalMs?: number; overdueMarginMs: number; checkEveryMs: number; sampleSize: number };

/** The scheduled fetch of the ECB's reference rates (docs/exchange-rates.md). */
export type FxRatesSettings = { url: string; intervalMs: number };

/** POST /v2/purchases (docs/purchases.md). */
export type PurchaseSettings = {
  /** PURCHASE_OWNERSHIP with PURCHASE_OWNERSHIP_BY_APP: the rule of each app. */
  ownership: (appId: string) => 'transfer' | 'keep';
  /** PURCHASE_WAIT: how long an answer waits for the projection. */
  waitMs: number;
};

export class ConfigError extends Error {
  constructor(readonly problems: string[]) {
    super(`Invalid configuration:\n  - ${problems.join('\n  - ')}`);
  }
}

export function loadConfig(source: NodeJS.ProcessEnv = process.env): AppConfig {
  // Empty strings count as unset so that `FOO= npm start` falls back to the default.
  const raw = Object.fromEntries(Object.entries(source).filter(([, v]) => v !== undefined && v !== ''));
  const problems: string[] = [];
  const env = Object.assign({}, ...ENVIRONMENT.map((slice) => validSlice(slice, raw, problems))) as Environment;
  if (env.KAFKA_SASL_MECHANISM && !(env.KAFKA_SASL_USERNAME && env.KAFKA_SASL_PASSWORD)) {
    problems.push('KAFKA_SASL_MECHANISM requires KAFKA_SASL_USERNAME and KAFKA_SASL_PASSWORD');
  }
  if (env.NODE_ENV === 'production' && !env.JWT_SECRET && !env.JWT_JWKS_URI) {
    problems.push('JWT_SECRET or JWT_JWKS_URI must be set when NODE_ENV=production');
  }
  const weakSecret = env.NODE_ENV === 'production' && env.JWT_SECRET ? weakSecretReason(env.JWT_SECRET) : undefined;
  if (weakSecret) problems.push(`JWT_SECRET ${weakSecret}: with NODE_ENV=production use a random one, e.g. \`openssl rand -base64 32\``);
  if (env.DATABASE_READ_URL && env.DATABASE_READ_URL.length === 0) problems.push('DATABASE_READ_URL must list at least one postgres:// URL');
  if (env.DATABASE_READ_MAX_LAG !== undefined && !env.DATABASE_READ_URL?.length)
    problems.push('DATABASE_READ_MAX_LAG needs DATABASE_READ_URL: the replicas whose lag it bounds');
  if (env.KAFKA_BROKERS && env.KAFKA_BROKERS.length === 0) {
    problems.push('KAFKA_BROKERS must list at least one host:port');
  }
  if (env.NODE_ENV === 'production' && !env.ALLOW_EMBEDDED) {
    if (!env.DATABASE_URL) problems.push('DATABASE_URL must be set when NODE_ENV=production (or ALLOW_EMBEDDED=true to run the embedded PostgreSQL)');
    // An API-only instance that takes no store notifications neither reads nor writes the event log.
    const usesEventLog = env.CONSUMER_ENABLED || Boolean(env.APPLE_APPS?.length || env.GOOGLE_APPS?.length || env.STRIPE_APPS?.length);
    if (!env.KAFKA_BROKERS && usesEventLog) {
      problems.push(
        'KAFKA_BROKERS must be set when NODE_ENV=production (or ALLOW_EMBEDDED=true to use the embedded event log; an API-only instance, CONSUMER_ENABLED=false without APPLE_APPS or GOOGLE_APPS, needs neither)',
      );
    }
  }
  const apple = appleSettings(env, problems);
  const google = googleSettings(env, problems);
  const stripe = stripeSettings(env, problems);
  const ownershipByApp = new Map<string, 'transfer' | 'keep'>();
  for (const entry of env.PURCHASE_OWNERSHIP_BY_APP ?? []) {
    const [appId, rule] = entry.split(':') as [string, 'transfer' | 'keep'];
    const wrong = applicationIdProblem(appId);
    if (wrong) problems.push(`PURCHASE_OWNERSHIP_BY_APP entry ${JSON.stringify(entry)}: the application id ${wrong}`);
    else ownershipByApp.set(appId, rule);
  }
  if (env.FX_RATES_URL) {
    const source = new URL(env.FX_RATES_URL);
    // As STRIPE_API_BASE_URL: rates decide every amountUSD, so they are not taken over a network that could alter them.
    if (source.protocol === 'http:' && !['127.0.0.1', 'localhost', '[::1]'].includes(source.hostname))
      problems.push(`FX_RATES_URL must use https unless it is a loopback address (rates fetched in clear could be altered on the way); got ${source.origin}`);
    if (source.username || source.password) problems.push('FX_RATES_URL must not carry a user name or password');
  } else if (raw.FX_RATES_INTERVAL !== undefined) {
    problems.push('FX_RATES_INTERVAL needs FX_RATES_URL: the address it fetches');
  }
  const warnings = Object.keys(raw)
    .filter((name) => OWNED_PREFIXES.some((p) => name.startsWith(p)) && !KNOWN_VARIABLES.has(name))
    .sort()
    .map((name) => `unknown variable ${name} ignored (a typo? see the README's configuration table)`);
  if (problems.length > 0) throw new ConfigError(problems);

  return Object.freeze({
    env: env.NODE_ENV as AppConfig['env'],
    port: env.PORT,
    host: env.HOST,
    corsOrigins: Object.freeze((env.CORS_ORIGINS ?? []).map(corsOrigin)),
    databaseUrl: env.DATABASE_URL,
    databaseReadUrls: Object.freeze(env.DATABASE_READ_URL ?? []),
    databaseReadMaxLagMs: env.DATABASE_READ_MAX_LAG,
    dataDir: env.DATA_DIR,
    embeddedPgPort: env.EMBEDDED_PG_PORT,
    jwt: Object.freeze({
      secret: env.JWT_SECRET,
      jwksUri: env.JWT_JWKS_URI,
      issuer: env.JWT_ISSUER,
      audience: env.JWT_AUDIENCE,
    }),
    logLevel: env.LOG_LEVEL,
    logFormat: env.LOG_FORMAT === 'auto' ? (process.stdout.isTTY ? 'pretty' : 'json') : env.LOG_FORMAT,
    kafka: env.KAFKA_BROKERS
      ? Object.freeze({
          brokers: env.KAFKA_BROKERS,
          topic: env.KAFKA_TOPIC,
          groupId: env.KAFKA_GROUP_ID,
          clientId: env.KAFKA_CLIENT_ID,
          ssl: env.KAFKA_SSL,
          sessionTimeoutMs: env.KAFKA_SESSION_TIMEOUT_MS,
          maxBytesPerPartition: env.KAFKA_MAX_BYTES_PER_PARTITION,
          partitionsConcurrency: env.KAFKA_PARTITIONS_CONCURRENCY,
          roundShareMessages: env.KAFKA_ROUND_SHARE_MESSAGES,
          sasl: env.KAFKA_SASL_MECHANISM
            ? { mechanism: env.KAFKA_SASL_MECHANISM, username: env.KAFKA_SASL_USERNAME!, password: env.KAFKA_SASL_PASSWORD! }
            : undefined,
        })
      : undefined,
    eventLogTopic: env.KAFKA_TOPIC,
    consumerEnabled: env.CONSUMER_ENABLED,
    projectionBatchSize: env.PROJECTION_BATCH_SIZE,
    docsUiEnabled: env.DOCS_UI_ENABLED,
    metricsPerApp: env.METRICS_PER_APP,
    cryptoShredding: env.CRYPTO_SHREDDING,
    eventTimeMaxSkewMs: env.EVENT_TIME_MAX_SKEW_MS,
    eventMaxBytes: raw.EVENT_MAX_BYTES === undefined ? (env.KAFKA_MAX_MESSAGE_BYTES ?? env.EVENT_MAX_BYTES) : env.EVENT_MAX_BYTES,
    statementTimeoutMs: env.STATEMENT_TIMEOUT_MS,
    requestTimeoutMs: env.REQUEST_TIMEOUT_MS,
    apple,
    google,
    stripe,
    importConcurrency: env.IMPORT_CONCURRENCY,
    commission: commissionOf(env.STORE_COMMISSION),
    fxRates: env.FX_RATES_URL ? Object.freeze({ url: env.FX_RATES_URL, intervalMs: env.FX_RATES_INTERVAL }) : undefined,
    reconcile: Object.freeze({
      intervalMs: env.RECONCILE_INTERVAL,
      overdueMarginMs: env.RECONCILE_OVERDUE_MARGIN,
      checkEveryMs: env.RECONCILE_CHECK_EVERY,
      sampleSize: env.RECONCILE_SAMPLE_SIZE,
    }),
    purchases: Object.freeze({ ownership: (appId: string) => ownershipByApp.get(appId) ?? env.PURCHASE_OWNERSHIP, waitMs: env.PURCHASE_WAIT }),
    webhooks: Object.freeze({
      deliveryEnabled: env.WEBHOOK_DELIVERY_ENABLED,
      maxAgeMs: env.WEBHOOK_MAX_AGE,
      timeoutMs: env.WEBHOOK_TIMEOUT_MS,
      retryBaseMs: env.WEBHOOK_RETRY_BASE_MS,
      maxInFlight: env.WEBHOOK_MAX_IN_FLIGHT,
      pollMs: env.WEBHOOK_POLL_MS,
      allowHosts: Object.freeze((env.WEBHOOK_ALLOW_HOSTS ?? []).map((h) => h.toLowerCase())),
    }),
    warnings: Object.freeze(warnings),
  });
}

/**
 * An origin as a browser sends it: an http(s) URL's origin; an app WebView's custom scheme and host
 * as written, lower-cased (WHATWG URL gives such schemes the opaque origin "null", which would match nothing).
 */
function corsOrigin(value: string): string {
  return /^https?:/i.test(value) ? new URL(value).origin : value.toLowerCase();
}

/** Nest injection token for the frozen AppConfig. */
export const APP_CONFIG = Symbol('APP_CONFIG');
