import { createPrivateKey, X509Certificate } from 'node:crypto';
import { readFileSync } from 'node:fs';
import type { StripeEnv } from './env/stripe.env.js';
import type { ImportEnv } from './env/import.env.js';
import type { AppleEnv } from './env/apple.env.js';
import type { GoogleEnv } from './env/google.env.js';

// The store settings are the part of the configuration read from files (service account keys,
// root certificates, .p8 keys) besides the environment: a file that is missing or not what its
// variable says is a problem named like any wrong variable.

export type GoogleSettings = {
  apps: ReadonlyMap<string, { packageName: string }>;
  pubsub: { audience: string; jwksUri: string; issuers: readonly string[]; serviceAccount?: string };
  serviceAccount: { email: string; privateKey: string; keyId?: string };
  apiBaseUrl: string;
  selfSignedJwt: boolean;
  /** GOOGLE_VOIDED_POLL_INTERVAL in ms; undefined: voided purchases are not polled. */
  voidedPollIntervalMs?: number;
};

export function googleSettings(env: GoogleEnv, problems: string[]): GoogleSettings | undefined {
  if (!env.GOOGLE_APPS?.length) return undefined;
  const apps = new Map<string, { packageName: string }>();
  for (const entry of env.GOOGLE_APPS) {
    const parts = entryParts('GOOGLE_APPS', entry, 'appId:packageName', [2, 2], problems);
    if (!parts) continue;
    const [appId, packageName] = parts;
    const wrong = [
      checkAppId('GOOGLE_APPS', entry, appId, 'an application id of your choosing'),
      checkPart(
        'GOOGLE_APPS',
        entry,
        'the package name (2nd part)',
        packageName,
        PACKAGE_NAME,
        'look like com.example.app: two or more parts separated by dots, each starting with a letter, of letters, digits and _',
      ),
    ].filter((p) => p !== undefined);
    problems.push(...wrong);
    if (wrong.length === 0) apps.set(appId, { packageName });
  }
  if (!env.GOOGLE_PUBSUB_AUDIENCE) problems.push('GOOGLE_APPS needs GOOGLE_PUBSUB_AUDIENCE: the audience set on the Pub/Sub push subscription');
  let serviceAccount: GoogleSettings['serviceAccount'] | undefined;
  if (!env.GOOGLE_SERVICE_ACCOUNT_FILE)
    problems.push('GOOGLE_APPS needs GOOGLE_SERVICE_ACCOUNT_FILE: the JSON key of a service account that may read purchases');
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
    pubsub: {
      audience: env.GOOGLE_PUBSUB_AUDIENCE,
      jwksUri: env.GOOGLE_PUBSUB_JWKS_URI,
      issuers: env.GOOGLE_PUBSUB_ISSUERS,
      serviceAccount: env.GOOGLE_PUBSUB_SERVICE_ACCOUNT,
    },
    serviceAccount,
    apiBaseUrl: env.GOOGLE_API_BASE_URL,
    selfSignedJwt: env.GOOGLE_API_SELF_SIGNED_JWT,
    voidedPollIntervalMs: env.GOOGLE_VOIDED_POLL_INTERVAL === undefined ? undefined : env.GOOGLE_VOIDED_POLL_INTERVAL * 1000,
  };
}

export type StripeApp = { webhookSecret: string; apiKey: string };
export type StripeSettings = {
  apps: ReadonlyMap<string, StripeApp>;
  apiBaseUrl: string;
  usernameMetadataKey: string;
  toleranceSeconds: number;
  /** STRIPE_GRACE_PERIOD: access kept while Stripe retries a renewal (0: none). */
  gracePeriodMs: number;
};

/** STRIPE_APPS: appId:whsec_...:rk_... entries. A wrong entry is named by its application id and part, never by its secrets. */
export function stripeSettings(env: StripeEnv, problems: string[]): StripeSettings | undefined {
  if (!env.STRIPE_APPS?.length) return undefined;
  const apps = new Map<string, StripeApp>();
  for (const entry of env.STRIPE_APPS) {
    const [appId = '', webhookSecret = '', apiKey = '', ...rest] = entry.split(':');
    const wrong = [
      rest.length > 0 || !apiKey ? `STRIPE_APPS: the entry of ${JSON.stringify(appId)} must have 3 parts, appId:webhookSigningSecret:apiKey` : undefined,
      checkAppId('STRIPE_APPS', appId, appId, 'an application id of your choosing'),
      /^whsec_[A-Za-z0-9]{8,}$/.test(webhookSecret)
        ? undefined
        : `STRIPE_APPS: the 2nd part of ${JSON.stringify(appId)}'s entry must be the webhook endpoint's signing secret (whsec_..., Dashboard, Webhooks)`,
      apiKey === '' || /^(rk|sk)_(test|live)_[A-Za-z0-9]{8,}$/.test(apiKey)
        ? undefined
        : `STRIPE_APPS: the 3rd part of ${JSON.stringify(appId)}'s entry must be an API key (rk_test_..., rk_live_..., or sk_...): a restricted key with read access to subscriptions and invoices`,
    ].filter((p) => p !== undefined);
    if (wrong.length > 0) problems.push(...wrong);
    else apps.set(appId, { webhookSecret, apiKey });
  }
  const base = new URL(env.STRIPE_API_BASE_URL);
  if (base.protocol === 'http:' && !['127.0.0.1', 'localhost', '[::1]'].includes(base.hostname))
    problems.push(`STRIPE_API_BASE_URL must use https unless it is a loopback address (the API keys travel in every request); got ${base.origin}`);
  if (base.pathname !== '/') problems.push(`STRIPE_API_BASE_URL must be an origin without a path (Stripe's client adds /v1/...); got ${base.pathname}`);
  return {
    apps,
    apiBaseUrl: env.STRIPE_API_BASE_URL,
    usernameMetadataKey: env.STRIPE_USERNAME_METADATA_KEY,
    toleranceSeconds: env.STRIPE_WEBHOOK_TOLERANCE,
    gracePeriodMs: env.STRIPE_GRACE_PERIOD ?? 0,
  };
}

export type AppleApp = { bundleId: string; environment: 'Production' | 'Sandbox'; appAppleId?: number };
export type AppleApiKey = { issuerId: string; keyId: string; privateKey: string; file: string };
export type AppleSettings = {
  rootCertificates: readonly Buffer[];
  apps: ReadonlyMap<string, AppleApp>;
  apiKeys: ReadonlyMap<string, AppleApiKey>;
  apiBaseUrl?: string;
};

export function appleSettings(env: AppleEnv & ImportEnv, problems: string[]): AppleSettings | undefined {
  if (!env.APPLE_APPS && !env.APPLE_ROOT_CERTIFICATES) {
    if (env.APPLE_API_KEYS)
      problems.push(
        'APPLE_API_KEYS needs APPLE_APPS and APPLE_ROOT_CERTIFICATES: the apps the keys are for, and the roots their signed answers are checked against',
      );
    return undefined;
  }
  if (!env.APPLE_APPS?.length) problems.push('APPLE_ROOT_CERTIFICATES is set but APPLE_APPS names no app (appId:bundleId:Production|Sandbox[:appAppleId])');
  if (!env.APPLE_ROOT_CERTIFICATES?.length)
    problems.push('APPLE_APPS needs APPLE_ROOT_CERTIFICATES: the files of the root certificates to trust (Apple Root CA - G3 in production)');
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
      appAppleId === undefined
        ? undefined
        : checkPart(
            'APPLE_APPS',
            entry,
            'the app Apple ID (4th part)',
            appAppleId,
            /^\d{1,15}$/,
            'be a number of 1-15 digits (App Store Connect, App Information: Apple ID)',
          ),
    ].filter((p) => p !== undefined);
    if (wrong.length > 0) {
      problems.push(...wrong);
      continue;
    }
    if (environment === 'Production' && appAppleId === undefined)
      problems.push(`APPLE_APPS: ${appId} is Production and needs its appAppleId (appId:bundleId:Production:appAppleId)`);
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
      checkPart(
        'APPLE_API_KEYS',
        entry,
        'the issuer id (2nd part)',
        issuerId,
        UUID,
        'be a UUID such as 57246542-96fe-1a63-e053-0824d011072a (App Store Connect, Users and Access, Integrations: Issuer ID)',
      ),
      // Apple's Key IDs are 10 characters; any length up to 32 is taken so that test keys pass, and a
      // mistyped one is refused by Apple (401, naming APPLE_API_KEYS).
      checkPart(
        'APPLE_API_KEYS',
        entry,
        'the key id (3rd part)',
        keyId,
        /^[A-Za-z0-9]{1,32}$/,
        "be letters and digits: the key's 10-character Key ID, such as 2X9R4HXF34 (also in the file name SubscriptionKey_<keyId>.p8)",
      ),
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
