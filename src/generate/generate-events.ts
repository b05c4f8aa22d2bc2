// Realistic, deterministic purchase-event streams for benchmarks and demos: several apps of very
// different sizes, monthly and yearly subscriptions with renewals, trials, refunds (revocations),
// auto-renew turned off, billing retry with and without a grace period, upgrades from monthly to
// yearly, pending purchases completed later, consumables, two platforms, sandbox purchases,
// receipts restored on another account (with later renewals still naming the first one),
// transactions reported under another receipt, spread over three years. Same seed, same events.

export type GenerateOptions = {
  seed: number;
  /** Stop after this many events. */
  events: number;
  /** Relative sizes of the apps; the first is the big publisher. */
  apps?: { id: string; weight: number }[];
  /** Last day of the three-year window. */
  until?: Date;
  /**
   * `customer` (default): one customer's whole history after another, ids `<seed>-<n>`. `time`: the
   * same events interleaved by event time with random UUIDv4 ids, as stores send them (one
   * notification UUID per event, receipts scattered over every batch).
   */
  order?: 'customer' | 'time';
  /**
   * Time order holds about this many events in memory to sort them (default 1,000,000,
   * ~1 GB of objects); a longer stream is generated again once per time window of that size.
   */
  sortEvents?: number;
};

const DAY = 86_400_000;

export function mulberry32(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

export const DEFAULT_APPS = [
  { id: 'big-app', weight: 80 },
  { id: 'mid-app', weight: 14 },
  { id: 'small-app', weight: 4 },
  { id: 'tiny-app', weight: 1.5 },
  { id: 'new-app', weight: 0.5 },
];

type Event = Record<string, unknown>;

/**
 * Yields CloudEvents (as plain objects) customer by customer; within a customer, in time order.
 * Nothing is timed after `until`: a stream generated today holds no event from the future.
 */
export function* generateEvents(o: GenerateOptions): Generator<Event> {
  if (o.order === 'time') {
    yield* timeOrdered(o);
    return;
  }
  const until = (o.until ?? new Date(Date.UTC(2026, 10, 21))).getTime();
  let produced = 0;
  for (const event of lifecycles(o, until, () => produced)) {
    if (Date.parse(event.time as string) > until) continue;
    produced++;
    yield event;
    if (produced >= o.events) return;
  }
}

/**
 * The customer-order stream sorted by time, stably (events of equal time keep their customer order).
 * Ten million events do not fit in a default heap as objects, so a stream longer than `sortEvents`
 * is read once for its times alone, cut into time windows of about that many events (equal times
 * in one window), and generated again per window, keeping and sorting only that window's events:
 * the same stream, ids included, as one sort of the whole.
 */
function* timeOrdered(o: GenerateOptions): Generator<Event> {
  const rnd = mulberry32(o.seed ^ 0x5eed);
  const customerOrder = () => generateEvents({ ...o, order: 'customer' });
  for (const e of sortedByTime(customerOrder, o.events, o.sortEvents ?? 1_000_000)) yield { ...e, id: uuidV4(rnd) };
}

/**
 * The events of `source()` (at most `count`, the same on every call) sorted stably by their `time`
 * (toISOString form, whose string order is the numeric order), holding about `limit` of them at a time.
 */
export function* sortedByTime(source: () => Iterable<Event>, count: number, limit: number): Generator<Event> {
  if (!Number.isInteger(limit) || limit < 1) throw new RangeError(`sortEvents must be a positive integer, not ${limit}`);
  const byTime = (a: Event, b: Event) => (a.time === b.time ? 0 : (a.time as string) < (b.time as string) ? -1 : 1);
  if (count <= limit) {
    yield* [...source()].sort(byTime);
    return;
  }
  const times = new Float64Array(count);
  let n = 0;
  for (const e of source()) times[n++] = Date.parse(e.time as string);
  const sorted = times.subarray(0, n).slice().sort();
  // each cut is an event's time, so events of equal time always fall in one window
  const cuts = [-Infinity];
  for (let i = limit; i < n; i += limit) if (sorted[i] > cuts[cuts.length - 1]) cuts.push(sorted[i]);
  cuts.push(Infinity);
  for (let w = 0; w + 1 < cuts.length; w++) {
    const window: Event[] = [];
    let i = 0;
    for (const e of source()) {
      const time = times[i++];
      if (time >= cuts[w] && time < cuts[w + 1]) window.push(e);
    }
    yield* window.sort(byTime);
  }
}

/** A random (version 4, RFC 9562) UUID drawn from `rnd`, so a seed still gives the same stream. */
function uuidV4(rnd: () => number): string {
  const bytes = new Uint8Array(16);
  for (let i = 0; i < 16; i++) bytes[i] = Math.floor(rnd() * 256);
  bytes[6] = (bytes[6] & 0x0f) | 0x40;
  bytes[8] = (bytes[8] & 0x3f) | 0x80;
  const hex = Buffer.from(bytes).toString('hex');
  return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-${hex.slice(12, 16)}-${hex.slice(16, 20)}-${hex.slice(20)}`;
}

function* lifecycles(o: GenerateOptions, until: number, count: () => number): Generator<Event> {
  const rnd = mulberry32(o.seed);
  const apps = o.apps ?? DEFAULT_APPS;
  const totalWeight = apps.reduce((s, a) => s + a.weight, 0);
  const from = until - 3 * 365 * DAY;
  const pick = <T>(items: T[]) => items[Math.floor(rnd() * items.length)];
  const iso = (ms: number) => new Date(ms).toISOString();
  let eventSeq = 0;
  let customer = 0;

  const emit = (app: string, type: string, time: number, data: Event): Event => {
    return {
      specversion: '1.0',
      id: `${o.seed}-${++eventSeq}`,
      source: data.platform === 'google' ? 'google-rtdn' : 'apple-server-notifications',
      type,
      time: iso(time),
      appid: app,
      datacontenttype: 'application/json',
      data,
    };
  };

  while (count() < o.events) {
    customer++;
    let r = rnd() * totalWeight;
    const app = apps.find((a) => (r -= a.weight) < 0)?.id ?? apps[0].id;
    const platform = rnd() < 0.55 ? 'apple' : 'google';
    const user = `user-${o.seed}-${customer}`;
    const receiptId = `${platform}:r-${o.seed}-${customer}`;
    const sandbox = rnd() < 0.02;
    const start = from + Math.floor(rnd() * (until - from));
    const kind = rnd();
    const common = { platform, receiptId, ...(sandbox ? { sandbox: true } : {}) };

    if (kind < 0.2) {
      // consumables: a few coin packs
      const purchases = 1 + Math.floor(rnd() * 4);
      for (let i = 0; i < purchases && count() < o.events; i++) {
        const t = start + i * Math.floor(rnd() * 20 * DAY);
        if (t > until) break;
        const id = `${platform}:c-${o.seed}-${customer}-${i}`;
        const price = pick([0.99, 1.99, 4.99, 9.99]);
        yield emit(app, 'transaction.updated', t + 2000, {
          ...common,
          transactionId: id,
          purchaseId: id,
          productId: `${platform}:coins_${pick([100, 500, 1200])}`,
          ...(i === 0 ? { applicationUsername: user } : {}),
          purchaseDate: iso(t),
          quantity: 1 + Math.floor(rnd() * 3),
          isConsumed: true,
          isAcknowledged: true,
          amountUSD: price,
          amountMicros: Math.round(price * 1e6),
          currency: 'USD',
        });
      }
      continue;
    }

    const yearly = kind > 0.85;
    const period = (yearly ? 365 : 30) * DAY;
    const product = `${platform}:pro_${yearly ? 'yearly' : 'monthly'}`;
    const price = yearly ? 49.99 : 4.99;
    const purchaseId = `${platform}:p-${o.seed}-${customer}`;
    const trial = rnd() < 0.3;
    const lifetime = yearly ? 1 + Math.floor(rnd() * 3) : 1 + Math.floor(-Math.log(1 - rnd()) * 8);
    // a restore moves the receipt to another account; renewals after it may still name the first
    const restoreAfter = rnd() < 0.01 ? Math.floor(rnd() * lifetime) : -1;
    let t = start;
    let n = 0;
    if (trial) {
      yield emit(app, 'transaction.updated', t + 1000, {
        ...common,
        transactionId: `${purchaseId}-t`,
        purchaseId,
        productId: product,
        applicationUsername: user,
        purchaseDate: iso(start),
        expirationDate: iso(t + 7 * DAY),
        isTrialPeriod: true,
        renewalIntent: 'Renew',
        amountMicros: 0,
        currency: 'USD',
      });
      t += 7 * DAY;
    }
    for (; n < lifetime && t < until && count() < o.events; n++, t += period) {
      const last = n === lifetime - 1;
      const data: Event = {
        ...common,
        transactionId: `${purchaseId}-${n}`,
        purchaseId,
        productId: product,
        ...((n === 0 && !trial) || n === restoreAfter + 1 ? { applicationUsername: user } : {}),
        purchaseDate: iso(start),
        ...(n > 0 || trial ? { lastRenewalDate: iso(t) } : {}),
        expirationDate: iso(t + period),
        renewalIntent: 'Renew',
        isAcknowledged: true,
        amountUSD: price,
        amountMicros: Math.round(price * 1e6),
        currency: 'USD',
        ...(n === 0 && rnd() < 0.1 ? { isIntroPeriod: true } : {}),
      };
      if (n === 0 && !trial && platform === 'google' && rnd() < 0.02 && count() < o.events) {
        // a pending purchase (e.g. cash payment), completed a day later
        yield emit(app, 'transaction.updated', t + 1000, { ...data, isPending: true });
        if (count() >= o.events) break;
      }
      yield emit(app, 'transaction.updated', t + 3000, data);
      if (n === restoreAfter && count() < o.events) {
        yield emit(app, 'receipt.linked', t + period / 3, { receiptId, applicationUsername: `${user}-restored` });
      }
      if (last && rnd() < 0.4 && count() < o.events) {
        // turned auto-renew off during the last period
        yield emit(app, 'transaction.updated', t + period / 2, { ...data, renewalIntent: 'Lapse', renewalIntentChangeDate: iso(t + period / 2 - 1000) });
      }
      if (last && !yearly && rnd() < 0.05 && count() < o.events) {
        // the renewal failed: billing retry, with a 16-day grace period half of the time
        const grace = rnd() < 0.5 ? { gracePeriodExpirationDate: iso(t + period + 16 * DAY) } : {};
        yield emit(app, 'transaction.updated', t + period + 60_000, { ...data, isBillingRetryPeriod: true, ...grace });
      }
      if (rnd() < 0.02 && count() < o.events) {
        // refunded: Apple keeps the expiration and adds the revocation
        const refundAt = t + Math.floor(rnd() * 10 * DAY);
        yield emit(app, 'transaction.updated', refundAt, {
          ...data,
          revocationDate: iso(refundAt),
          isExpired: true,
          cancelationReason: 'Customer',
          renewalIntent: 'Lapse',
        });
        break;
      }
      if (!yearly && !last && rnd() < 0.01 && count() < o.events) {
        // upgraded to the yearly plan half-way through the period
        const at = t + period / 2;
        yield emit(app, 'transaction.updated', at, { ...data, isUpgraded: true });
        if (count() >= o.events) break;
        const upgradeId = `${purchaseId}-up`;
        yield emit(app, 'transaction.updated', at + 1000, {
          ...common,
          transactionId: upgradeId,
          purchaseId: upgradeId,
          productId: `${platform}:pro_yearly`,
          purchaseDate: iso(at),
          expirationDate: iso(at + 365 * DAY),
          renewalIntent: 'Renew',
          isAcknowledged: true,
          amountUSD: 49.99,
          amountMicros: 49_990_000,
          currency: 'USD',
        });
        break;
      }
      if (n > 0 && rnd() < 0.002 && count() < o.events) {
        // the store reports the renewal under another receipt of the same platform (a merged account)
        yield emit(app, 'transaction.updated', t + DAY, { ...data, receiptId: `${platform}:r-${o.seed}-${Math.max(1, customer - 1)}` });
      }
    }
  }
}
