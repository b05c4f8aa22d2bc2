import type { StoredCustomerFacts } from '../customer-info.js';
import type { ListCustomersQuery } from './list-customers.query.js';
import { filterConditions, statusLiterals, UNINDEXED_END } from './customer-filters.js';
import { statusSql, type StatusColumns } from '../customer-status.js';

/** A customer row: its name, receipts and the kept summary facts customerInfo is derived from. */
export type CustomerRow = StoredCustomerFacts & { applicationUsername: string; receiptIds: string[] };

export const CUSTOMER_COLUMNS = `application_username AS "applicationUsername", receipt_ids AS "receiptIds",
       transaction_count AS "transactionCount", last_purchase_date AS "lastPurchaseDate",
       expiration_date AS "expirationDate", last_renewal_date AS "lastRenewalDate",
       renewal_intent AS "renewalIntent"`;

export type PageStartRow = { total: string | null; day: string | null; before: string | null };

/**
 * Total customers and the first-seen day holding row `skip` (with the rows before it), from the
 * exact per-day counts the projection maintains. One row comes back.
 */
export const customerPageStartSql = `
  WITH c AS (SELECT day, n, sum(n) OVER (ORDER BY day) AS cum FROM read_model.customer_day_counts WHERE app_id = $1)
  SELECT (SELECT sum(n) FROM c)::text AS total, p.day::text AS day, (p.cum - p.n)::text AS before
  FROM (SELECT 1) one LEFT JOIN LATERAL (SELECT day, n, cum FROM c WHERE cum > $2 ORDER BY day LIMIT 1) p ON true`;

/**
 * One page of customers by (first_seen_at, application_username), starting `offset` rows into the
 * day the page begins in. The summary columns are kept by the projection: one indexed read.
 */
export function customerPageSql(q: ListCustomersQuery, from: Date, offset: number): { sql: string; params: unknown[] } {
  return {
    sql: `SELECT ${CUSTOMER_COLUMNS} FROM read_model.customers
          WHERE app_id = $1 AND first_seen_at >= $2
          ORDER BY first_seen_at, application_username OFFSET $3 LIMIT $4`,
    params: [q.appId, from, offset, q.limit],
  };
}

/** The named customers that exist (and match the filters), in the listing's order. */
export function customersByNameSql(q: ListCustomersQuery, now: Date): { name: string; sql: string; params: unknown[] } {
  const f = filterConditions(q.filters, now, 3);
  return {
    name: `customers-by-name${f.key ? `:${f.key}` : ''}`,
    sql: `SELECT ${CUSTOMER_COLUMNS} FROM read_model.customers
          WHERE app_id = $1 AND application_username = ANY($2::text[])${f.sql}
          ORDER BY first_seen_at, application_username`,
    params: [q.appId, q.usernames, ...f.params],
  };
}

/** The UTC day of a timestamptz parameter. */
const dayOfParam = (p: string) => `((${p}::timestamptz AT TIME ZONE 'UTC')::date)`;

/**
 * A cell of customer_end_weeks as statusSql's facts: its access-end and grace-start days, with the
 * cell's stand-ins for none (-infinity, infinity) read as null. For a cell whose days are not the
 * instant's, the status on days is the status on instants.
 */
const CELL: StatusColumns = { end: `nullif(c.end_day, '-infinity')`, graceFrom: `nullif(c.grace_day, 'infinity')`, billingRetry: 'c.billing_retry' };

export type FilteredPageStartRow = PageStartRow & { days: string[] | null };

/** A Monday, midnight UTC (the first day of the Common Era): date_bin's origin for UTC weeks and days. */
const MONDAY = `TIMESTAMPTZ '0001-01-01 00:00:00+00'`;

/**
 * Total customers matching the filters at `now` and the first-seen day holding match `skip` (with
 * the matches before it), from customer_end_weeks, for every filter set: per first-seen week, the
 * cells decided by their days (their access end and grace start on other days than the instant's
 * and the bounds') plus the customers whose access ends on one of those days or whose grace starts
 * on the instant's, counted with the filters as the page applies them on customers_access_end_idx
 * and customers_grace_idx. That gives the exact total and the week the page starts in; that week's
 * matches are counted per day on customers_page_idx to find the day. The three indexes carry every
 * column a filter reads (first_seen_at, the access end, grace, billing retry, intent, product), so
 * none of this reads the table. All in one snapshot. The days listed are the start week's from the
 * start day and every day of the later weeks the page reaches.
 */
export function filteredPageStartSql(q: ListCustomersQuery, now: Date): { name: string; sql: string; params: unknown[] } {
  const f = q.filters;
  const params: unknown[] = [q.appId, q.skip, q.limit];
  const param = (value: unknown) => {
    params.push(value);
    return `$${params.length}`;
  };
  const cell: string[] = [];
  const endDays: string[] = [];
  let graceDay: string | undefined;
  if (f.statuses) {
    const at = param(now);
    cell.push(`${statusSql(dayOfParam(at), CELL)} IN (${statusLiterals(f.statuses)})`);
    // `none` never changes with the clock: no day is uncertain for it alone
    if (f.statuses.some((s) => s !== 'none')) {
      endDays.push(dayOfParam(at));
      graceDay = dayOfParam(at);
    }
  }
  if (f.renewalIntent) cell.push(`c.renewal_intent = ${param(f.renewalIntent)}`);
  if (f.productId) cell.push(`c.product_id = ${param(f.productId)}`);
  if (f.expiresAfter) {
    const after = param(f.expiresAfter);
    cell.push(`c.end_day > ${dayOfParam(after)}`);
    endDays.push(dayOfParam(after));
  }
  if (f.expiresBefore) {
    const before = param(f.expiresBefore);
    cell.push(`c.end_day < ${dayOfParam(before)} AND c.end_day > '-infinity'`);
    endDays.push(dayOfParam(before));
  }
  const uncertain = `ARRAY[${endDays.join(', ')}]::date[]`;
  cell.push(`c.end_day <> ALL(${uncertain})`);
  if (graceDay) cell.push(`c.grace_day <> ${graceDay}`);
  const exact = filterConditions(f, now, params.length + 1);
  // the same conditions on the same parameters, for the start week's walk of customers_page_idx
  const inWeek = filterConditions(f, now, params.length + 1, UNINDEXED_END).sql;
  params.push(...exact.params);
  // the customers of the uncertain cells, counted once: by access-end day, then those whose grace starts on the instant's day
  const graceRows = !graceDay
    ? ''
    : `UNION ALL
          SELECT (r.week AT TIME ZONE 'UTC')::date, r.n FROM (
            SELECT date_bin('7 days', first_seen_at, ${MONDAY}) AS week, count(*)::int AS n FROM read_model.customers
            WHERE app_id = $1${exact.sql} AND grace_from >= (${graceDay}::timestamp AT TIME ZONE 'UTC') AND grace_from < ((${graceDay} + 1)::timestamp AT TIME ZONE 'UTC')
              AND NOT coalesce((expiration_date AT TIME ZONE 'UTC')::date = ANY(${uncertain}), false)
            GROUP BY 1) r`;
  return {
    name: `customers-filtered-start:${exact.key}`,
    sql: `
      WITH weeks AS (
        SELECT week, sum(n)::int AS n FROM (
          SELECT c.first_week, c.n::int FROM read_model.customer_end_weeks c
          WHERE c.app_id = $1${cell.map((x) => ` AND ${x}`).join('')}
          UNION ALL
          -- each uncertain access-end day on its own index range, a day once; date_bin from a Monday
          -- is date_trunc('week') in UTC without a time zone conversion per row
          SELECT (r.week AT TIME ZONE 'UTC')::date, r.n FROM (SELECT DISTINCT day FROM unnest(${uncertain}) AS b (day)) b CROSS JOIN LATERAL (
            SELECT date_bin('7 days', first_seen_at, ${MONDAY}) AS week, count(*)::int AS n FROM read_model.customers
            WHERE app_id = $1${exact.sql}
              AND expiration_date >= (b.day::timestamp AT TIME ZONE 'UTC') AND expiration_date < ((b.day + 1)::timestamp AT TIME ZONE 'UTC')
            GROUP BY 1) r
          ${graceRows}
        ) x (week, n) GROUP BY week
      ), run AS (SELECT week, n, sum(n) OVER (ORDER BY week) AS cum FROM weeks WHERE n <> 0),
      start AS (SELECT week, n, cum FROM run WHERE cum > $2 ORDER BY week LIMIT 1),
      days AS (
        SELECT d.day, d.n, s.cum - s.n + sum(d.n) OVER (ORDER BY d.day) AS cum
        FROM start s CROSS JOIN LATERAL (
          SELECT (t.day AT TIME ZONE 'UTC')::date AS day, t.n FROM (
            SELECT date_bin('1 day', first_seen_at, ${MONDAY}) AS day, count(*)::int AS n FROM read_model.customers
            WHERE app_id = $1${inWeek}
              AND first_seen_at >= (s.week::timestamp AT TIME ZONE 'UTC') AND first_seen_at < ((s.week + 7)::timestamp AT TIME ZONE 'UTC')
            GROUP BY 1) t) d
      ), p AS (SELECT day, n, cum FROM days WHERE cum > $2 ORDER BY day LIMIT 1)
      SELECT (SELECT sum(n) FROM run)::text AS total, p.day::text AS day, (p.cum - p.n)::text AS before,
             (SELECT array_agg(x.day ORDER BY x.day) FROM (
                SELECT day::text FROM days WHERE day >= p.day AND cum - n < $2 + $3
                UNION ALL
                SELECT (r.week + i)::text FROM run r CROSS JOIN generate_series(0, 6) i
                WHERE p.day IS NOT NULL AND r.week > (SELECT week FROM start) AND r.cum - r.n < $2 + $3
             ) x (day)) AS days
      FROM (SELECT 1) one LEFT JOIN p ON true`,
    params,
  };
}

/**
 * The page filteredPageStartSql places, `offset` matches into the first of the days it listed (the
 * day the page starts in and those with matches up to the page's end): the page's keys are found
 * walking each listed day on its own range of customers_page_idx, which carries every column the
 * filters read, so neither the days without a match between them nor the non-matching customers are
 * read from the table; only the page's rows are, by key.
 */
export function filteredPageSql(q: ListCustomersQuery, now: Date, days: string[], offset: number): { name: string; sql: string; params: unknown[] } {
  const f = filterConditions(q.filters, now, 2);
  const at = 2 + f.params.length;
  return {
    name: `customers-filtered-keys:${f.key}`,
    // the keys' columns are named o1, o2: the customer columns stay unambiguous
    sql: `SELECT ${CUSTOMER_COLUMNS} FROM (
            SELECT x.o1, x.o2 FROM unnest($${at}::date[]) AS d(day) CROSS JOIN LATERAL (
              SELECT first_seen_at AS o1, application_username AS o2 FROM read_model.customers
              WHERE app_id = $1${f.sql}
                AND first_seen_at >= (d.day::timestamp AT TIME ZONE 'UTC') AND first_seen_at < ((d.day + 1)::timestamp AT TIME ZONE 'UTC')
              ORDER BY first_seen_at, application_username LIMIT $${at + 1}::bigint + $${at + 2}::bigint) x
            ORDER BY x.o1, x.o2 OFFSET $${at + 1} LIMIT $${at + 2}) k
          JOIN read_model.customers c ON c.app_id = $1 AND c.application_username = k.o2
          ORDER BY k.o1, k.o2`,
    params: [q.appId, ...f.params, days, offset, q.limit],
  };
}
