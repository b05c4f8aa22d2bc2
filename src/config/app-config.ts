import 'reflect-metadata';
import { createPrivateKey, X509Certificate } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { weakSecretReason } from './secret-strength.js';
import { plainToInstance, Transform } from 'class-transformer';
import {
  IsBoolean,
  IsIn,
  IsInt,
  IsOptional,
  IsString,
  IsUrl,
  Max,
  Min,
  Matches,
  MinLength,
  validateSync,
} from 'class-validator';

const toInt = ({ value }: { value: unknown }) =>
  typeof value === 'string' && /^-?\d+$/.test(value.trim()) ? Number(value) : value;
const toBool = ({ value }: { value: unknown }) => {
  if (typeof value !== 'string') return value;
  const v = value.trim().toLowerCase();
  return v === 'true' || v === '1' ? true : v === 'false' || v === '0' ? false : value;
};
const toList = ({ value }: { value: unknown }) =>
  typeof value === 'string'
    ? value
        .split(',')
        .map((s) => s.trim())
        .filter(Boolean)
    : value;

const DURATION = /^(\d{1,9})(ms|s|m|h|d)$/;
const UNIT_MS = { ms: 1, s: 1000, m: 60_000, h: 3_600_000, d: 86_400_000 } as const;
/** "24h", "90m", "30s", "500ms": a unit is required, so a bare number cannot be misread. */
const toDurationMs = ({ value }: { value: unknown }) => {
  if (typeof value !== 'string') return value;
  const m = DURATION.exec(value.trim());
  return m ? Number(m[1]) * UNIT_MS[m[2] as keyof typeof UNIT_MS] : value;
};

/** Every environment variable the service reads, with its default. Parsed once at boot. */
class Environment {
  @IsOptional() @IsIn(['development', 'production', 'test'])
  NODE_ENV = 'development';

  @Transform(toInt) @IsInt() @Min(0) @Max(65535)
  PORT = 3000;

  /** Address to listen on: 0.0.0.0 (all IPv4) suits containers; 127.0.0.1 keeps the API on this host. */
  @IsString() @Matches(/^[A-Za-z0-9.:_-]{1,253}$/, { message: 'HOST must be an address or host name such as 0.0.0.0, 127.0.0.1 or ::' })
  HOST = '0.0.0.0';

  /** Origins a browser app may call the API from (CORS); unset: none. */
  @IsOptional() @Transform(toList) @IsUrl({ require_tld: false, require_protocol: true, protocols: ['http', 'https'] }, { each: true, message: 'CORS_ORIGINS must list origins such as https://app.example.com' })
  CORS_ORIGINS?: string[];

  @IsOptional() @IsUrl({ protocols: ['postgres', 'postgresql'], require_tld: false, require_protocol: true })
  DATABASE_URL?: string;

  /**
   * Streaming replicas of DATABASE_URL's server, comma-separated: the read endpoints run on them
   * (docs/scaling.md); everything that writes stays on DATABASE_URL.
   */
  @IsOptional() @Transform(toList) @IsUrl({ protocols: ['postgres', 'postgresql'], require_tld: false, require_protocol: true }, { each: true, message: 'DATABASE_READ_URL must list postgres:// URLs, comma-separated' })
  DATABASE_READ_URL?: string[];

  /** A replica lagging more than this takes no reads, and with none left readiness fails. */
  @IsOptional() @Transform(toDurationMs) @IsInt({ message: 'DATABASE_READ_MAX_LAG must be a duration such as 30s, 5m or 500ms' }) @Min(100) @Max(86_400_000)
  DATABASE_READ_MAX_LAG?: number;

  @IsString() @MinLength(1)
  DATA_DIR = './.data';

  @Transform(toInt) @IsInt() @Min(1024) @Max(65535)
  EMBEDDED_PG_PORT = 54329;

  @IsOptional() @IsString() @MinLength(32, { message: 'JWT_SECRET must be at least 32 characters' })
  JWT_SECRET?: string;

  @IsOptional() @IsUrl({ require_tld: false, protocols: ['http', 'https'] })
  JWT_JWKS_URI?: string;

  @IsOptional() @IsString()
  JWT_ISSUER?: string;

  @IsOptional() @IsString()
  JWT_AUDIENCE?: string;

  @IsIn(['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'])
  LOG_LEVEL = 'info';

  /** auto: readable lines on a terminal (development), JSON lines elsewhere (collectors, files, pipes). */
  @IsIn(['auto', 'json', 'pretty'])
  LOG_FORMAT: 'auto' | 'json' | 'pretty' = 'auto';

  @IsOptional() @Transform(toList) @IsString({ each: true })
  KAFKA_BROKERS?: string[];

  @IsString() @MinLength(1)
  KAFKA_TOPIC = 'purchase-events';

  @IsString() @MinLength(1)
  KAFKA_GROUP_ID = 'subscription-read-models';

  @IsString() @MinLength(1)
  KAFKA_CLIENT_ID = 'subscription-records';

  @Transform(toBool) @IsBoolean()
  KAFKA_SSL = false;

  @IsOptional() @IsIn(['plain', 'scram-sha-256', 'scram-sha-512'])
  KAFKA_SASL_MECHANISM?: 'plain' | 'scram-sha-256' | 'scram-sha-512';

  @IsOptional() @IsString()
  KAFKA_SASL_USERNAME?: string;

  @IsOptional() @IsString()
  KAFKA_SASL_PASSWORD?: string;

  @Transform(toInt) @IsInt() @Min(6000) @Max(300_000)
  KAFKA_SESSION_TIMEOUT_MS = 30_000;

  @Transform(toInt) @IsInt() @Min(1024) @Max(256 * 1024 * 1024)
  KAFKA_MAX_BYTES_PER_PARTITION = 4 * 1024 * 1024;

  @Transform(toInt) @IsInt() @Min(1) @Max(64)
  KAFKA_PARTITIONS_CONCURRENCY = 2;

  @Transform(toInt) @IsInt() @Min(1) @Max(1_000_000)
  KAFKA_ROUND_SHARE_MESSAGES = 150;

  @Transform(toBool) @IsBoolean()
  CONSUMER_ENABLED = true;

  @Transform(toBool) @IsBoolean()
  DOCS_UI_ENABLED = true;

  /** /metrics is unauthenticated: series per application (tenant id in an `app` label) only when this is true. */
  @Transform(toBool) @IsBoolean()
  METRICS_PER_APP = false;

  /** Usernames in the events the service publishes itself sealed with a per-customer key (docs/privacy.md, "Crypto-shredding"). */
  @Transform(toBool) @IsBoolean()
  CRYPTO_SHREDDING = false;

  @Transform(toInt) @IsInt() @Min(1) @Max(100_000)
  PROJECTION_BATCH_SIZE = 5000;

  /** An event timed further ahead of its log timestamp is dead-lettered (future_time). */
  @Transform(toInt) @IsInt() @Min(0) @Max(365 * 86_400_000)
  EVENT_TIME_MAX_SKEW_MS = 86_400_000;

  /**
   * The largest message (event with its key) the log takes, in every mode; default the broker's
   * message.max.bytes. `publish` refuses longer lines, consumers dead-letter longer messages
   * (too_large), dead-letter copies to <topic>.dlq are truncated to fit it.
   */
  @Transform(toInt) @IsInt() @Min(4096) @Max(16 * 1024 * 1024)
  EVENT_MAX_BYTES = 1_048_588;

  /** The former name of EVENT_MAX_BYTES, still read when that one is unset. */
  @IsOptional() @Transform(toInt) @IsInt() @Min(4096) @Max(16 * 1024 * 1024)
  KAFKA_MAX_MESSAGE_BYTES?: number;

  /** With NODE_ENV=production, the embedded PostgreSQL and event log are refused unless this is true. */
  @Transform(toBool) @IsBoolean()
  ALLOW_EMBEDDED = false;

  /** PostgreSQL statement_timeout for API queries. */
  @Transform(toInt) @IsInt() @Min(100) @Max(600_000)
  STATEMENT_TIMEOUT_MS = 10_000;

  /** Time an HTTP request may take before the service answers 503. */
  @Transform(toInt) @IsInt() @Min(100) @Max(600_000)
  REQUEST_TIMEOUT_MS = 15_000;

  /** This instance sends webhooks (any number of instances may: deliveries are claimed in PostgreSQL). */
  @Transform(toBool) @IsBoolean()
  WEBHOOK_DELIVERY_ENABLED = true;

  /** How long a change is retried, and how long an endpoint may fail before it is disabled. */
  @Transform(toDurationMs) @IsInt({ message: 'WEBHOOK_MAX_AGE must be a duration such as 24h, 90m, 30s or 500ms' }) @Min(1000) @Max(30 * 86_400_000)
  WEBHOOK_MAX_AGE = 86_400_000;

  @Transform(toInt) @IsInt() @Min(100) @Max(120_000)
  WEBHOOK_TIMEOUT_MS = 10_000;

  /** First retry delay; each further one doubles (up to an hour), with jitter. */
  @Transform(toInt) @IsInt() @Min(10) @Max(3_600_000)
  WEBHOOK_RETRY_BASE_MS = 5_000;

  @Transform(toInt) @IsInt() @Min(1) @Max(256)
  WEBHOOK_MAX_IN_FLIGHT = 16;

  @Transform(toInt) @IsInt() @Min(10) @Max(60_000)
  WEBHOOK_POLL_MS = 500;

  /** Hosts a webhook may be sent to although they are (or resolve to) internal addresses, and over plain http. */
  @IsOptional() @Transform(toList) @IsString({ each: true })
  WEBHOOK_ALLOW_HOSTS?: string[];

  /** Files (DER or PEM) of the roots Apple's signing chains must lead to: Apple's own in production. */
  @IsOptional() @Transform(toList) @IsString({ each: true })
  APPLE_ROOT_CERTIFICATES?: string[];

  /** appId:bundleId:Production|Sandbox[:appAppleId], comma-separated: apps taking App Store notifications. */
  @IsOptional() @Transform(toList) @IsString({ each: true })
  APPLE_APPS?: string[];

  /** appId:issuerId:keyId:path-to-.p8, comma-separated: In-App Purchase keys `import apple` calls the App Store Server API with. */
  @IsOptional() @Transform(toList) @IsString({ each: true })
  APPLE_API_KEYS?: string[];

  /** The App Store Server API's address for every app (tests: a loopback mock); unset: Apple's, by each app's environment. */
  @IsOptional() @IsUrl({ require_tld: false, protocols: ['http', 'https'] })
  APPLE_API_BASE_URL?: string;

  /** Store requests `import` keeps in flight at once. */
  @Transform(toInt) @IsInt() @Min(1) @Max(64)
  IMPORT_CONCURRENCY = 4;

  /** appId:packageName, comma-separated: apps taking Google Play RTDN through Pub/Sub push. */
  @IsOptional() @Transform(toList) @IsString({ each: true })
  GOOGLE_APPS?: string[];

  /** The audience the Pub/Sub push subscription puts in its OIDC token. */
  @IsOptional() @IsString() @MinLength(1)
  GOOGLE_PUBSUB_AUDIENCE?: string;

  @IsUrl({ require_tld: false, protocols: ['http', 'https'] })
  GOOGLE_PUBSUB_JWKS_URI = 'https://www.googleapis.com/oauth2/v3/certs';

  @Transform(toList) @IsString({ each: true })
  GOOGLE_PUBSUB_ISSUERS = ['https://accounts.google.com', 'accounts.google.com'];

  /** When set, the push token's email must be this service account (the push subscription's). */
  @IsOptional() @IsString()
  GOOGLE_PUBSUB_SERVICE_ACCOUNT?: string;

  /** JSON key of the service account allowed to read purchases in Play Console. */
  @IsOptional() @IsString()
  GOOGLE_SERVICE_ACCOUNT_FILE?: string;

  @IsUrl({ require_tld: false, protocols: ['http', 'https'] })
  GOOGLE_API_BASE_URL = 'https://androidpublisher.googleapis.com/';

  /** Sign API calls with the service account's own JWT instead of exchanging it for an OAuth token first. */
  @Transform(toBool) @IsBoolean()
  GOOGLE_API_SELF_SIGNED_JWT = false;

  /** Seconds between polls of voidedpurchases.list for every GOOGLE_APPS app (refunds Google does not notify); unset: no polling. */
  @IsOptional() @Transform(toInt) @IsInt() @Min(10) @Max(86_400)
  GOOGLE_VOIDED_POLL_INTERVAL?: number;
}

export type GoogleSettings = {
  apps: ReadonlyMap<string, { packageName: string }>;
  pubsub: { audience: string; jwksUri: string; issuers: readonly string[]; serviceAccount?: string };
  serviceAccount: { email: string; privateKey: string; keyId?: string };
  apiBaseUrl: string;
  selfSignedJwt: boolean;
  /** GOOGLE_VOIDED_POLL_INTERVAL in ms; undefined: voided purchases are not polled. */
  voidedPollIntervalMs?: number;
};

function googleSettings(env: Environment, problems: string[]): GoogleSettings | undefined {
  if (!env.GOOGLE_APPS?.length) return undefined;
  const apps = new Map<string, { packageName: string }>();
  for (const entry of env.GOOGLE_APPS) {
    const parts = entryParts('GOOGLE_APPS', entry, 'appId:packageName', [2, 2], problems);
    if (!parts) continue;
    const [appId, packageName] = parts;
    const wrong = [
      checkAppId('GOOGLE_APPS', entry, appId, 'an application id of your choosing'),
      checkPart('GOOGLE_APPS', entry, 'the package name (2nd part)', packageName, PACKAGE_NAME, 'look like com.example.app: two or more parts separated by dots, each starting with a letter, of letters, digits and _'),
    ].filter((p) => p !== undefined);
    problems.push(...wrong);
    if (wrong.length === 0) apps.set(appId, { packageName });
  }
  if (!env.GOOGLE_PUBSUB_AUDIENCE) problems.push('GOOGLE_APPS needs GOOGLE_PUBSUB_AUDIENCE: the audience set on the Pub/Sub push subscription');
  let serviceAccount: GoogleSettings['serviceAccount'] | undefined;
  if (!env.GOOGLE_SERVICE_ACCOUNT_FILE) problems.push('GOOGLE_APPS needs GOOGLE_SERVICE_ACCOUNT_FILE: the JSON key of a service account that may read purchases');
  else {
    try {
      const key = JSON.parse(readFileSync(env.GOOGLE_SERVICE_ACCOUNT_FILE, 'utf8')) as { client_email?: string; private_key?: string; private_key_id?: string };
      if (!key.client_email || !key.private_key) throw new Error('no client_email or private_key');
      serviceAccount = { email: key.client_email, privateKey: key.private_key, keyId: key.private_key_id };
    } catch (error) {
      problems.push(`GOOGLE_SERVICE_ACCOUNT_FILE: ${env.GOOGLE_SERVICE_ACCOUNT_FILE} is not a service account key (${(error as Error).message})`);
    }
  }
  if (!serviceAccount || !env.GOOGLE_PUBSUB_AUDIENCE) return undefined;
  return {
    apps,
    pubsub: { audience: env.GOOGLE_PUBSUB_AUDIENCE, jwksUri: env.GOOGLE_PUBSUB_JWKS_URI, issuers: env.GOOGLE_PUBSUB_ISSUERS, serviceAccount: env.GOOGLE_PUBSUB_SERVICE_ACCOUNT },
    serviceAccount,
    apiBaseUrl: env.GOOGLE_API_BASE_URL,
    selfSignedJwt: env.GOOGLE_API_SELF_SIGNED_JWT,
    voidedPollIntervalMs: env.GOOGLE_VOIDED_POLL_INTERVAL === undefined ? undefined : env.GOOGLE_VOIDED_POLL_INTERVAL * 1000,
  };
}

export type AppleApp = { bundleId: string; environment: 'Production' | 'Sandbox'; appAppleId?: number };
export type AppleApiKey = { issuerId: string; keyId: string; privateKey: string; file: string };
export type AppleSettings = { rootCertificates: readonly Buffer[]; apps: ReadonlyMap<string, AppleApp>; apiKeys: ReadonlyMap<string, AppleApiKey>; apiBaseUrl?: string };

function appleSettings(env: Environment, problems: string[]): AppleSettings | undefined {
  if (!env.APPLE_APPS && !env.APPLE_ROOT_CERTIFICATES) {
    if (env.APPLE_API_KEYS) problems.push('APPLE_API_KEYS needs APPLE_APPS and APPLE_ROOT_CERTIFICATES: the apps the keys are for, and the roots their signed answers are checked against');
    return undefined;
  }
  if (!env.APPLE_APPS?.length) problems.push('APPLE_ROOT_CERTIFICATES is set but APPLE_APPS names no app (appId:bundleId:Production|Sandbox[:appAppleId])');
  if (!env.APPLE_ROOT_CERTIFICATES?.length) problems.push('APPLE_APPS needs APPLE_ROOT_CERTIFICATES: the files of the root certificates to trust (Apple Root CA - G3 in production)');
  const rootCertificates: Buffer[] = [];
  for (const file of env.APPLE_ROOT_CERTIFICATES ?? []) {
    try {
      const bytes = readFileSync(file);
      new X509Certificate(bytes); // parses DER or PEM, or throws
      rootCertificates.push(bytes);
    } catch (error) {
      problems.push(`APPLE_ROOT_CERTIFICATES: ${file} is not a readable certificate (${(error as Error).message})`);
    }
  }
  const apps = new Map<string, AppleApp>();
  for (const entry of env.APPLE_APPS ?? []) {
    const parts = entryParts('APPLE_APPS', entry, 'appId:bundleId:Production|Sandbox[:appAppleId]', [3, 4], problems);
    if (!parts) continue;
    const [appId, bundleId, environment, appAppleId] = parts;
    const wrong = [
      checkAppId('APPLE_APPS', entry, appId, 'an application id of your choosing'),
      checkPart('APPLE_APPS', entry, 'the bundle id (2nd part)', bundleId, /^[^\s]+$/, "be the app's bundle id, such as com.example.app"),
      checkPart('APPLE_APPS', entry, 'the environment (3rd part)', environment, /^(Production|Sandbox)$/, 'be Production or Sandbox'),
      appAppleId === undefined ? undefined : checkPart('APPLE_APPS', entry, 'the app Apple ID (4th part)', appAppleId, /^\d{1,15}$/, 'be a number of 1-15 digits (App Store Connect, App Information: Apple ID)'),
    ].filter((p) => p !== undefined);
    if (wrong.length > 0) {
      problems.push(...wrong);
      continue;
    }
    if (environment === 'Production' && appAppleId === undefined) problems.push(`APPLE_APPS: ${appId} is Production and needs its appAppleId (appId:bundleId:Production:appAppleId)`);
    apps.set(appId, { bundleId, environment: environment as AppleApp['environment'], appAppleId: appAppleId === undefined ? undefined : Number(appAppleId) });
  }
  const apiKeys = new Map<string, AppleApiKey>();
  for (const entry of env.APPLE_API_KEYS ?? []) {
    // The path is the rest of the entry: it may hold a ':' itself.
    const parts = entryParts('APPLE_API_KEYS', entry, 'appId:issuerId:keyId:path-to-.p8', [4, Infinity], problems);
    if (!parts) continue;
    const [appId, issuerId, keyId] = parts;
    const file = parts.slice(3).join(':');
    const wrong = [
      checkAppId('APPLE_API_KEYS', entry, appId, 'an app id of APPLE_APPS'),
      checkPart('APPLE_API_KEYS', entry, 'the issuer id (2nd part)', issuerId, UUID, 'be a UUID such as 57246542-96fe-1a63-e053-0824d011072a (App Store Connect, Users and Access, Integrations: Issuer ID)'),
      // Apple's Key IDs are 10 characters; any length up to 32 is taken so that test keys pass, and a
      // mistyped one is refused by Apple (401, naming APPLE_API_KEYS).
      checkPart('APPLE_API_KEYS', entry, 'the key id (3rd part)', keyId, /^[A-Za-z0-9]{1,32}$/, "be letters and digits: the key's 10-character Key ID, such as 2X9R4HXF34 (also in the file name SubscriptionKey_<keyId>.p8)"),
      file === '' ? `APPLE_API_KEYS: ${JSON.stringify(entry)}: the path to the .p8 file (4th part) is empty` : undefined,
    ].filter((p) => p !== undefined);
    if (wrong.length > 0) {
      problems.push(...wrong);
      continue;
    }
    if (!apps.has(appId)) problems.push(`APPLE_API_KEYS: ${appId} is not an app of APPLE_APPS`);
    try {
      const privateKey = readFileSync(file, 'utf8');
      if (createPrivateKey(privateKey).asymmetricKeyType !== 'ec') throw new Error('not an EC (ES256) key');
      apiKeys.set(appId, { issuerId, keyId, privateKey, file });
    } catch (error) {
      problems.push(`APPLE_API_KEYS: ${file} (app ${appId}) is not a readable In-App Purchase key (.p8) (${(error as Error).message})`);
    }
  }
  return { rootCertificates, apps, apiKeys, apiBaseUrl: env.APPLE_API_BASE_URL };
}

const UUID = /^[0-9A-Fa-f]{8}-[0-9A-Fa-f]{4}-[0-9A-Fa-f]{4}-[0-9A-Fa-f]{4}-[0-9A-Fa-f]{12}$/;
const PACKAGE_NAME = /^[A-Za-z][A-Za-z0-9_]*(?:\.[A-Za-z][A-Za-z0-9_]*)+$/;

/**
 * The ':'-separated parts of one entry of a store setting, or undefined with a problem saying the
 * form when there are fewer than `least` or more than `most` of them.
 */
function entryParts(variable: string, entry: string, form: string, [least, most]: [number, number], problems: string[]): string[] | undefined {
  const parts = entry.split(':');
  if (parts.length >= least && parts.length <= most) return parts;
  const expected = most === Infinity || least === most ? `${least} parts` : `${least} or ${most} parts`;
  problems.push(`${variable}: ${JSON.stringify(entry)} must be ${form} (${expected} separated by ':'; got ${parts.length})`);
  return undefined;
}

/** A problem naming the part of an entry that does not have the form it must have, or undefined. */
function checkPart(variable: string, entry: string, part: string, value: string, form: RegExp, must: string): string | undefined {
  return form.test(value) ? undefined : `${variable}: ${JSON.stringify(entry)}: ${part} ${JSON.stringify(value)} must ${must}`;
}

function checkAppId(variable: string, entry: string, appId: string, what: string): string | undefined {
  return checkPart(variable, entry, 'the app id (1st part)', appId, /^[^\s]+$/, `be ${what}, without spaces`);
}

/** Prefixes of the variables this service owns: an unknown one of these is most likely a typo. */
const OWNED_PREFIXES = ['CORS_', 'KAFKA_', 'DATABASE_', 'JWT_', 'WEBHOOK_', 'EMBEDDED_PG_', 'PROJECTION_', 'EVENT_', 'APPLE_', 'GOOGLE_', 'METRICS_', 'IMPORT_'];
/** Every variable loadConfig reads; deploy/kubernetes is checked against it (test/deploy/kubernetes.spec.ts). */
export const KNOWN_VARIABLES: ReadonlySet<string> = new Set(Object.keys(new Environment()).concat(['DATABASE_URL', 'DATABASE_READ_URL', 'DATABASE_READ_MAX_LAG', 'JWT_SECRET', 'JWT_JWKS_URI', 'JWT_ISSUER', 'JWT_AUDIENCE', 'KAFKA_BROKERS', 'KAFKA_SASL_MECHANISM', 'KAFKA_SASL_USERNAME', 'KAFKA_SASL_PASSWORD', 'KAFKA_MAX_MESSAGE_BYTES']));

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
  /** IMPORT_CONCURRENCY: store requests `import` keeps in flight. */
  importConcurrency: number;
  /** Things worth saying at start-up that do not stop it (unknown variables of ours, by name). */
  warnings: readonly string[];
}>;

export class ConfigError extends Error {
  constructor(readonly problems: string[]) {
    super(`Invalid configuration:\n  - ${problems.join('\n  - ')}`);
  }
}

export function loadConfig(source: NodeJS.ProcessEnv = process.env): AppConfig {
  // Empty strings count as unset so that `FOO= npm start` falls back to the default.
  const raw = Object.fromEntries(Object.entries(source).filter(([, v]) => v !== undefined && v !== ''));
  const env = plainToInstance(Environment, raw, { exposeDefaultValues: true });
  const errors = validateSync(env, { forbidUnknownValues: false });
  const problems = errors.flatMap((e) =>
    Object.values(e.constraints ?? {}).map((message) =>
      message.startsWith(e.property) ? message : `${e.property}: ${message}`,
    ),
  );
  if (env.KAFKA_SASL_MECHANISM && !(env.KAFKA_SASL_USERNAME && env.KAFKA_SASL_PASSWORD)) {
    problems.push('KAFKA_SASL_MECHANISM requires KAFKA_SASL_USERNAME and KAFKA_SASL_PASSWORD');
  }
  if (env.NODE_ENV === 'production' && !env.JWT_SECRET && !env.JWT_JWKS_URI) {
    problems.push('JWT_SECRET or JWT_JWKS_URI must be set when NODE_ENV=production');
  }
  const weakSecret = env.NODE_ENV === 'production' && env.JWT_SECRET ? weakSecretReason(env.JWT_SECRET) : undefined;
  if (weakSecret) problems.push(`JWT_SECRET ${weakSecret}: with NODE_ENV=production use a random one, e.g. \`openssl rand -base64 32\``);
  if (env.DATABASE_READ_URL && env.DATABASE_READ_URL.length === 0) problems.push('DATABASE_READ_URL must list at least one postgres:// URL');
  if (env.DATABASE_READ_MAX_LAG !== undefined && !env.DATABASE_READ_URL?.length) problems.push('DATABASE_READ_MAX_LAG needs DATABASE_READ_URL: the replicas whose lag it bounds');
  if (env.KAFKA_BROKERS && env.KAFKA_BROKERS.length === 0) {
    problems.push('KAFKA_BROKERS must list at least one host:port');
  }
  if (env.NODE_ENV === 'production' && !env.ALLOW_EMBEDDED) {
    if (!env.DATABASE_URL) problems.push('DATABASE_URL must be set when NODE_ENV=production (or ALLOW_EMBEDDED=true to run the embedded PostgreSQL)');
    // An API-only instance that takes no store notifications neither reads nor writes the event log.
    const usesEventLog = env.CONSUMER_ENABLED || Boolean(env.APPLE_APPS?.length || env.GOOGLE_APPS?.length);
    if (!env.KAFKA_BROKERS && usesEventLog) {
      problems.push('KAFKA_BROKERS must be set when NODE_ENV=production (or ALLOW_EMBEDDED=true to use the embedded event log; an API-only instance, CONSUMER_ENABLED=false without APPLE_APPS or GOOGLE_APPS, needs neither)');
    }
  }
  const apple = appleSettings(env, problems);
  const google = googleSettings(env, problems);
  const warnings = Object.keys(raw)
    .filter((name) => OWNED_PREFIXES.some((p) => name.startsWith(p)) && !KNOWN_VARIABLES.has(name))
    .sort()
    .map((name) => `unknown variable ${name} ignored (a typo? see the README's configuration table)`);
  if (problems.length > 0) throw new ConfigError(problems);

  return Object.freeze({
    env: env.NODE_ENV as AppConfig['env'],
    port: env.PORT,
    host: env.HOST,
    corsOrigins: Object.freeze((env.CORS_ORIGINS ?? []).map((o) => new URL(o).origin)),
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
    importConcurrency: env.IMPORT_CONCURRENCY,
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

/** Nest injection token for the frozen AppConfig. */
export const APP_CONFIG = Symbol('APP_CONFIG');
