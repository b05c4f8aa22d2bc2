import { linkEvent, txEvent } from './events.js';

import { mulberry32 as prng } from '../../src/generate/generate-events.js';

export { prng };

/**
 * A realistic mixed stream for `apps` tenants: subscriptions with renewals (new transactions and
 * updated snapshots), refunds, receipts moving between customers, repeated event ids and stale
 * snapshots arriving late. Returned in publish order (not time order).
 */
export function scenarioEvents(o: { seed: number; customers: number; apps?: string[]; tag?: string }): Record<string, unknown>[] {
  const rnd = prng(o.seed);
  const apps = o.apps ?? ['app-1', 'app-2'];
  const tag = o.tag ?? `s${o.seed}`;
  const out: Record<string, unknown>[] = [];
  const base = Date.UTC(2025, 0, 1);
  const iso = (ms: number) => new Date(ms).toISOString();
  for (let c = 0; c < o.customers; c++) {
    const app = apps[c % apps.length];
    const user = `user-${tag}-${c}`;
    const platform = rnd() < 0.5 ? 'apple' : 'google';
    const receiptId = `${platform}:r-${tag}-${c}`;
    const start = base + Math.floor(rnd() * 300) * 86_400_000;
    const renewals = Math.floor(rnd() * 4);
    for (let r = 0; r <= renewals; r++) {
      const t = start + r * 30 * 86_400_000;
      const data = {
        transactionId: `${platform}:t-${tag}-${c}-${r}`,
        purchaseId: `${platform}:p-${tag}-${c}`,
        productId: `${platform}:monthly`,
        platform,
        receiptId,
        purchaseDate: iso(start),
        lastRenewalDate: r > 0 ? iso(t) : undefined,
        expirationDate: iso(t + 30 * 86_400_000),
        renewalIntent: 'Renew',
        amountUSD: 4.99,
        currency: 'USD',
        ...(r === 0 ? { applicationUsername: user } : {}),
      };
      const event = txEvent({ app, id: `${tag}-${c}-${r}`, time: iso(t + 1000), data });
      out.push(event);
      if (rnd() < 0.2) out.push(event); // redelivered: same id
    }
    if (rnd() < 0.15) {
      // refund of the last transaction, and a stale snapshot that arrives after it
      const last = renewals;
      const t = start + last * 30 * 86_400_000;
      const refund = txEvent({
        app,
        id: `${tag}-${c}-refund`,
        time: iso(t + 5 * 86_400_000),
        data: {
          transactionId: `${platform}:t-${tag}-${c}-${last}`,
          purchaseId: `${platform}:p-${tag}-${c}`,
          productId: `${platform}:monthly`,
          platform,
          receiptId,
          purchaseDate: iso(start),
          expirationDate: iso(t + 5 * 86_400_000),
          isExpired: true,
          cancelationReason: 'Customer',
        },
      });
      out.push(refund);
      out.push(
        txEvent({
          app,
          id: `${tag}-${c}-stale`,
          time: iso(t + 2000),
          data: {
            transactionId: `${platform}:t-${tag}-${c}-${last}`,
            purchaseId: `${platform}:p-${tag}-${c}`,
            productId: `${platform}:monthly`,
            platform,
            receiptId,
            purchaseDate: iso(start),
            expirationDate: iso(t + 99 * 86_400_000),
          },
        }),
      );
    }
    if (rnd() < 0.1) {
      // receipt restored on another account
      out.push(linkEvent({ app, id: `${tag}-${c}-move`, time: iso(start + 400 * 86_400_000), receiptId, user: `${user}-new` }));
    }
  }
  return out;
}

export const toBuffers = (events: unknown[]) => events.map((e) => Buffer.from(JSON.stringify(e)));
export const toNdjson = (events: unknown[]) => events.map((e) => JSON.stringify(e)).join('\n') + '\n';
