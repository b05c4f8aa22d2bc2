import { refuseExtraArguments, UsageError } from './usage-error.js';
import { Inject } from '@nestjs/common';
import { Command, CommandRunner, Option, SubCommand } from 'nest-commander';
import type { DataSource } from 'typeorm';
import { APP_CONFIG, type AppConfig } from '../config/app-config.js';
import { openDatabase } from '../database/open-database.js';
import { WebhookTargetError } from '../webhooks/webhook-target.js';
import {
  addEndpoint,
  WebhookEndpointError,
  listDeliveries,
  listEndpoints,
  redeliver,
  removeEndpoint,
  rotateSecret,
  type EndpointListing,
} from '../webhooks/webhook-endpoints.js';

const iso = (d: Date | null) => (d ? d.toISOString() : '-');
const idOption = (value: string): string => {
  if (!/^\d{1,18}$/.test(value)) throw new UsageError(`--id must be a webhook endpoint id from webhooks list (got ${JSON.stringify(value)})`);
  return value;
};

/** Opens the database for one subcommand, with the parsed configuration. */
abstract class WebhooksSubCommand<O> extends CommandRunner {
  constructor(@Inject(APP_CONFIG) protected readonly config: AppConfig) {
    super();
  }

  async run(args: string[], options?: Record<string, unknown>): Promise<void> {
    refuseExtraArguments(`webhooks ${this.command.name()}`, args);
    this.checkUsage((options ?? {}) as O);
    const { db, close } = await openDatabase(this.config, 'webhooks');
    try {
      await this.runWith(db, (options ?? {}) as O);
    } finally {
      await close();
    }
  }

  /** Refuses a command line missing what it needs before the database is opened, so it exits 2 even without one. */
  protected checkUsage(_options: O): void {}

  protected abstract runWith(db: DataSource, options: O): Promise<void>;
}

function describeState(e: EndpointListing): string {
  if (e.disabled_at) return `disabled since ${iso(e.disabled_at)} (${e.disabled_reason ?? 'no reason recorded'}); redeliver --id ${e.id} enables it`;
  if (e.failing_since) return `failing since ${iso(e.failing_since)}`;
  return 'active';
}

@SubCommand({ name: 'add', description: 'Register a webhook endpoint for an application; prints its signing secret' })
export class WebhooksAddCommand extends WebhooksSubCommand<{ app?: string; url?: string; fromStart?: boolean }> {
  protected override checkUsage(o: { app?: string; url?: string }): void {
    if (!o.app) throw new UsageError('webhooks add needs --app <application id>');
    if (!o.url) throw new UsageError('webhooks add needs --url <https url>');
  }

  protected async runWith(db: DataSource, o: { app: string; url: string; fromStart?: boolean }): Promise<void> {
    const { id, secret } = await addEndpoint(db, this.config.webhooks, { appId: o.app, url: o.url, fromStart: o.fromStart }).catch((error: unknown) => {
      throw error instanceof WebhookTargetError || error instanceof WebhookEndpointError ? new UsageError(error.message) : error;
    });
    process.stderr.write(
      `webhook endpoint ${id} for ${o.app}: ${o.url} (${o.fromStart ? 'every row from the start of the change feed' : 'changes from now on'}); signing secret:\n`,
    );
    process.stdout.write(`${secret}\n`);
  }

  @Option({ flags: '--app <id>', description: 'the application whose changes are sent' })
  parseApp(value: string): string {
    return value;
  }

  @Option({
    flags: '--url <url>',
    description: 'https URL to POST to, not an internal address (internal hosts and http only if listed in WEBHOOK_ALLOW_HOSTS)',
  })
  parseUrl(value: string): string {
    return value;
  }

  @Option({ flags: '--from-start', description: 'also send every existing row (default: changes from now on)' })
  parseFromStart(): boolean {
    return true;
  }
}

@SubCommand({ name: 'list', description: 'Webhook endpoints with their state and delivery counts' })
export class WebhooksListCommand extends WebhooksSubCommand<{ app?: string }> {
  protected async runWith(db: DataSource, o: { app?: string }): Promise<void> {
    const endpoints = await listEndpoints(db, o.app);
    if (endpoints.length === 0) process.stdout.write('no webhook endpoints\n');
    for (const e of endpoints) {
      process.stdout.write(
        `${e.id}\t${e.app_id}\t${e.url}\t${describeState(e)}\tpending ${e.pending}${e.oldest_pending ? ` (oldest ${iso(e.oldest_pending)})` : ''}, delivered ${e.delivered}, failed ${e.failed}\n`,
      );
    }
  }

  @Option({ flags: '--app <id>', description: 'only this application' })
  parseApp(value: string): string {
    return value;
  }
}

@SubCommand({ name: 'remove', description: 'Delete a webhook endpoint and its deliveries' })
export class WebhooksRemoveCommand extends WebhooksSubCommand<{ id?: string }> {
  protected override checkUsage(o: { id?: string }): void {
    if (!o.id) throw new UsageError('webhooks remove needs --id <endpoint id>');
  }

  protected async runWith(db: DataSource, o: { id: string }): Promise<void> {
    await removeEndpoint(db, o.id);
    process.stdout.write(`webhook endpoint ${o.id} removed\n`);
  }

  @Option({ flags: '--id <id>', description: 'endpoint id (webhooks list)' })
  parseId(value: string): string {
    return idOption(value);
  }
}

@SubCommand({ name: 'rotate-secret', description: 'New signing secret; the old one also signs for 24 h' })
export class WebhooksRotateSecretCommand extends WebhooksSubCommand<{ id?: string }> {
  protected override checkUsage(o: { id?: string }): void {
    if (!o.id) throw new UsageError('webhooks rotate-secret needs --id <endpoint id>');
  }

  protected async runWith(db: DataSource, o: { id: string }): Promise<void> {
    const secret = await rotateSecret(db, o.id);
    process.stderr.write(`webhook endpoint ${o.id}: new signing secret (messages carry a signature with the previous one too for 24 h):\n`);
    process.stdout.write(`${secret}\n`);
  }

  @Option({ flags: '--id <id>', description: 'endpoint id (webhooks list)' })
  parseId(value: string): string {
    return idOption(value);
  }
}

type DeliveriesOptions = { id?: string; status?: string; limit?: number };

@SubCommand({ name: 'deliveries', description: "An endpoint's recent deliveries, newest first" })
export class WebhooksDeliveriesCommand extends WebhooksSubCommand<DeliveriesOptions> {
  protected override checkUsage(o: DeliveriesOptions): void {
    if (!o.id) throw new UsageError('webhooks deliveries needs --id <endpoint id>');
  }

  protected async runWith(db: DataSource, o: DeliveriesOptions & { id: string }): Promise<void> {
    const rows = await listDeliveries(db, o.id, { status: o.status, limit: o.limit ?? 20 });
    if (rows.length === 0) process.stdout.write('no deliveries\n');
    for (const d of rows) {
      const last = d.last_attempt_at
        ? `last attempt ${iso(d.last_attempt_at)}: ${d.last_status ?? '-'}${d.last_error ? ` ${d.last_error}` : ''}`
        : 'not attempted yet';
      const next = d.status === 'pending' && d.attempts > 0 ? `, next ${iso(d.next_attempt_at)}` : '';
      process.stdout.write(`${d.id}\t${d.event_type}\t${d.order_key}\t${d.status}\tattempts ${d.attempts}\tqueued ${iso(d.created_at)}\t${last}${next}\n`);
    }
  }

  @Option({ flags: '--id <id>', description: 'endpoint id (webhooks list)' })
  parseId(value: string): string {
    return idOption(value);
  }

  @Option({ flags: '--status <status>', description: 'pending, delivered or failed' })
  parseStatus(value: string): string {
    if (!['pending', 'delivered', 'failed'].includes(value))
      throw new UsageError(`--status must be pending, delivered or failed (got ${JSON.stringify(value)})`);
    return value;
  }

  @Option({ flags: '--limit <n>', description: 'how many (default 20)' })
  parseLimit(value: string): number {
    if (!/^\d{1,4}$/.test(value) || Number(value) < 1) throw new UsageError(`--limit must be a number from 1 to 9999 (got ${JSON.stringify(value)})`);
    return Number(value);
  }
}

@SubCommand({ name: 'redeliver', description: 'Send failed deliveries again (or one, with --delivery); enables a disabled endpoint' })
export class WebhooksRedeliverCommand extends WebhooksSubCommand<{ id?: string; delivery?: string }> {
  protected override checkUsage(o: { id?: string; delivery?: string }): void {
    if (!o.id) throw new UsageError('webhooks redeliver needs --id <endpoint id>');
  }

  protected async runWith(db: DataSource, o: { id: string; delivery?: string }): Promise<void> {
    const { queued: n, superseded } = await redeliver(db, o.id, o.delivery);
    const older =
      superseded > 0
        ? ` (${superseded} failed deliver${superseded === 1 ? 'y' : 'ies'} left as they are: a newer state of the same row was queued after them)`
        : '';
    process.stdout.write(`webhook endpoint ${o.id}: ${n} deliver${n === 1 ? 'y' : 'ies'} queued again${older}; the endpoint is enabled\n`);
  }

  @Option({ flags: '--id <id>', description: 'endpoint id (webhooks list)' })
  parseId(value: string): string {
    return idOption(value);
  }

  @Option({ flags: '--delivery <id>', description: 'one delivery (webhooks deliveries), pending, delivered or failed' })
  parseDelivery(value: string): string {
    if (!/^\d{1,18}$/.test(value)) throw new UsageError(`--delivery must be a delivery id from webhooks deliveries (got ${JSON.stringify(value)})`);
    return value;
  }
}

export const WEBHOOK_SUBCOMMANDS = [
  WebhooksAddCommand,
  WebhooksListCommand,
  WebhooksRemoveCommand,
  WebhooksRotateSecretCommand,
  WebhooksDeliveriesCommand,
  WebhooksRedeliverCommand,
];

@Command({
  name: 'webhooks',
  description: 'Register and inspect webhook endpoints (docs/change-feed.md, "Push: webhooks")',
  subCommands: WEBHOOK_SUBCOMMANDS,
})
export class WebhooksCommand extends CommandRunner {
  async run(): Promise<void> {
    throw new UsageError('webhooks needs a subcommand: add, list, remove, rotate-secret, deliveries or redeliver');
  }
}
