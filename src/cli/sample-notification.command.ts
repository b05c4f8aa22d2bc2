import { UsageError } from './usage-error.js';
import { Inject } from '@nestjs/common';
import { randomInt, randomUUID } from 'node:crypto';
import path from 'node:path';
import { Command, CommandRunner, Option } from 'nest-commander';
import { APP_CONFIG, type AppConfig } from '../config/app-config.js';
import { loadOrCreateAppleTestCa, signAppleJws } from '../store-notifications/apple/apple-test-ca.js';

const APPLE_TYPES = ['SUBSCRIBED', 'DID_RENEW', 'DID_CHANGE_RENEWAL_STATUS', 'EXPIRED', 'REFUND', 'TEST'] as const;
type AppleType = (typeof APPLE_TYPES)[number];
type Options = { bundleId?: string; user?: string; type: AppleType; subscription?: string; transaction?: boolean };

/** Samples are Sandbox notifications: Production ones also name the app's Apple id and come from Apple. */
const ENVIRONMENT = 'Sandbox';

const DAY = 86_400_000;

/**
 * Prints a notification body the service accepts once it trusts the local test CA, to try the
 * store-notification endpoints without a store. Never trust that CA in production.
 */
@Command({
  name: 'sample-notification',
  arguments: '<store>',
  description: 'Print a signed sample App Store Server Notification V2 body (store: apple), signed by a local test CA under DATA_DIR/apple-test-ca',
})
export class SampleNotificationCommand extends CommandRunner {
  constructor(@Inject(APP_CONFIG) private readonly config: AppConfig) {
    super();
  }

  async run(args: string[], o: Options): Promise<void> {
    if (args.length !== 1 || args[0] !== 'apple') throw new UsageError(`sample-notification takes one store: apple (got ${args.join(' ') || 'none'})`);
    if (!o.bundleId) throw new UsageError('sample-notification apple needs --bundle-id <the bundle id in APPLE_APPS>');
    const dir = path.join(this.config.dataDir, 'apple-test-ca');
    const { ca, rootPath, created } = await loadOrCreateAppleTestCa(dir);
    if (created) process.stderr.write(`created a test CA in ${dir}\n`);
    process.stderr.write(
      `the service accepts this once started with APPLE_ROOT_CERTIFICATES=${rootPath} and APPLE_APPS=<app id>:${o.bundleId}:${ENVIRONMENT}\n`,
    );

    const now = Date.now();
    const subscription = o.subscription ?? String(2_000_000_000_000 + randomInt(1_000_000_000));
    // An app's own purchase names no user unless the app set appAccountToken; a notification sample always names one.
    const user = o.user ?? (o.transaction ? undefined : randomUUID());
    const renewal = o.type === 'DID_RENEW';
    const transaction = {
      transactionId: renewal ? String(Number(subscription) + randomInt(1, 1_000_000)) : subscription,
      originalTransactionId: subscription,
      bundleId: o.bundleId,
      productId: 'pro_monthly',
      purchaseDate: now - 60_000,
      originalPurchaseDate: renewal ? now - 30 * DAY : now - 60_000,
      expiresDate: o.type === 'EXPIRED' ? now - 1000 : now + 30 * DAY,
      quantity: 1,
      type: 'Auto-Renewable Subscription',
      ...(user !== undefined ? { appAccountToken: user } : {}),
      inAppOwnershipType: 'PURCHASED',
      signedDate: now,
      environment: ENVIRONMENT,
      transactionReason: renewal ? 'RENEWAL' : 'PURCHASE',
      storefront: 'USA',
      storefrontId: '143441',
      price: 4990,
      currency: 'USD',
      ...(o.type === 'REFUND' ? { revocationDate: now - 1000, revocationReason: 0 } : {}),
    };
    if (o.transaction) {
      if (o.type === 'TEST') throw new UsageError('--transaction needs a --type that carries a transaction (not TEST)');
      process.stderr.write(`a StoreKit 2 transaction (Transaction.jwsRepresentation) of subscription ${subscription}: POST it to /v2/purchases\n`);
      process.stdout.write(JSON.stringify({ signedTransaction: signAppleJws(ca, transaction) }) + '\n');
      return;
    }
    const renewalInfo = {
      originalTransactionId: subscription,
      productId: 'pro_monthly',
      autoRenewProductId: 'pro_monthly',
      autoRenewStatus: o.type === 'DID_CHANGE_RENEWAL_STATUS' || o.type === 'EXPIRED' || o.type === 'REFUND' ? 0 : 1,
      signedDate: now,
      environment: ENVIRONMENT,
    };
    const subtype = { SUBSCRIBED: 'INITIAL_BUY', DID_CHANGE_RENEWAL_STATUS: 'AUTO_RENEW_DISABLED', EXPIRED: 'VOLUNTARY' } as Partial<Record<AppleType, string>>;
    const data: Record<string, unknown> = { bundleId: o.bundleId, bundleVersion: '1.0', environment: ENVIRONMENT, status: 1 };
    if (o.type !== 'TEST') {
      data.signedTransactionInfo = signAppleJws(ca, transaction);
      data.signedRenewalInfo = signAppleJws(ca, renewalInfo);
    }
    const payload = {
      notificationType: o.type,
      ...(subtype[o.type] ? { subtype: subtype[o.type] } : {}),
      notificationUUID: randomUUID(),
      version: '2.0',
      signedDate: now,
      data,
    };
    process.stderr.write(`${o.type} for subscription ${subscription}, user (appAccountToken) ${user}\n`);
    process.stdout.write(JSON.stringify({ signedPayload: signAppleJws(ca, payload) }) + '\n');
  }

  @Option({
    flags: '--transaction',
    description:
      'print a POST /v2/purchases body instead: {signedTransaction}, the StoreKit 2 transaction an app would send (appAccountToken only with --user)',
  })
  parseTransaction(): boolean {
    return true;
  }

  @Option({ flags: '--bundle-id <id>', description: 'bundle id of the app (as in APPLE_APPS)' })
  parseBundleId(value: string): string {
    return value;
  }

  @Option({ flags: '--user <name>', description: 'appAccountToken: the applicationUsername the purchase is linked to (default: a random UUID)' })
  parseUser(value: string): string {
    if (!value.trim()) throw new UsageError('--user must not be empty');
    return value;
  }

  @Option({ flags: '--type <type>', description: `notification type: ${APPLE_TYPES.join(', ')}`, defaultValue: 'SUBSCRIBED' })
  parseType(value: string): AppleType {
    if (!(APPLE_TYPES as readonly string[]).includes(value))
      throw new UsageError(`--type must be one of ${APPLE_TYPES.join(', ')} (got ${JSON.stringify(value)})`);
    return value as AppleType;
  }

  @Option({ flags: '--subscription <originalTransactionId>', description: 'continue an earlier sample subscription (DID_RENEW, EXPIRED, ...)' })
  parseSubscription(value: string): string {
    if (!/^\d{1,19}$/.test(value))
      throw new UsageError(`--subscription must be a number, the originalTransactionId of an earlier sample (got ${JSON.stringify(value)})`);
    return value;
  }
}
