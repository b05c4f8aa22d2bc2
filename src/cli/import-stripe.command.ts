import { Inject } from '@nestjs/common';
import { createHash } from 'node:crypto';
import { CommandRunner, Option, SubCommand } from 'nest-commander';
import { APP_CONFIG, type AppConfig } from '../config/app-config.js';
import { parseStripeLine, stripeImportEvents, stripeSubscriptionLines } from '../import/stripe/stripe-import.js';
import { StripeApi } from '../store-notifications/stripe/stripe-api.js';
import { openDatabase } from '../database/open-database.js';
import { keepRevocations } from '../store-notifications/stored-transaction.js';
import { runCliImport } from './run-cli-import.js';
import { refuseExtraArguments, UsageError } from './usage-error.js';

type Options = { app?: string; since?: string; dryRun?: boolean };

@SubCommand({
  name: 'stripe',
  description:
    "Import the app's Stripe subscriptions (every status) and their paid invoices through the Stripe API, as the webhook endpoint would publish them (docs/events/stripe.md). " +
    'Resumable and idempotent: a second run publishes nothing for subscriptions already imported. Exit 0: every subscription imported, unchanged or skipped; 1: some failed or the run stopped; 2: usage.',
})
export class ImportStripeCommand extends CommandRunner {
  constructor(@Inject(APP_CONFIG) private readonly config: AppConfig) {
    super();
  }

  async run(args: string[], options: Options = {}): Promise<void> {
    refuseExtraArguments('import stripe', args);
    if (!options.app) throw new UsageError('import stripe needs --app <application id>');
    const stripe = this.config.stripe;
    const app = stripe?.apps.get(options.app);
    if (!stripe || !app)
      throw new UsageError(
        `import stripe: application ${JSON.stringify(options.app)} is not in STRIPE_APPS (configured: ${[...(stripe?.apps.keys() ?? [])].join(', ') || 'none'})`,
      );
    const since = options.since === undefined ? undefined : parseSince(options.since);
    const api = new StripeApi(app.apiKey, stripe);
    const appId = options.app;
    const mapping = { usernameKey: stripe.usernameMetadataKey, gracePeriodMs: stripe.gracePeriodMs };
    const database = options.dryRun ? undefined : await openDatabase(this.config, 'import');
    try {
      await runCliImport(this.config, {
        dryRun: options.dryRun,
        appId,
        kind: 'stripe-subscriptions',
        // The same app and window is the same source: what an earlier run did is not done again.
        digest: createHash('sha256')
          .update(`${appId}\n${since ?? ''}`)
          .digest('hex'),
        db: database?.db,
        lines: stripeSubscriptionLines(api, since),
        parseLine: parseStripeLine,
        keyOf: (id) => id,
        fetchEvents: async (id) => {
          const result = await stripeImportEvents(appId, api, id, mapping, () => new Date());
          // A refund recorded by the webhook stays: Stripe's listing does not say an invoice was refunded.
          if (database && 'events' in result)
            await keepRevocations(database.db, appId, result.events as unknown as { type: string; data: Record<string, unknown> }[]);
          return result;
        },
      });
    } finally {
      await database?.close();
    }
  }

  @Option({ flags: '--app <id>', description: 'the application (STRIPE_APPS)' })
  parseApp(value: string): string {
    return value;
  }

  @Option({ flags: '--since <date>', description: 'only subscriptions created at or after this date (ISO 8601)' })
  parseSinceOption(value: string): string {
    return value;
  }

  @Option({ flags: '--dry-run', description: 'print the events to stdout instead of publishing them (nothing is recorded)' })
  parseDryRun(): boolean {
    return true;
  }
}

function parseSince(value: string): number {
  const ms = Date.parse(value);
  if (!/^\d{4}-\d{2}-\d{2}/.test(value) || !Number.isFinite(ms))
    throw new UsageError(`--since must be a date (2026-01-31) or an instant with offset (2026-01-31T12:00:00Z); got ${JSON.stringify(value)}`);
  return Math.floor(ms / 1000);
}
