/** A UTC day, YYYY-MM-DD, from a normalised event time string or a Date read back from PostgreSQL. */
export const utcDay = (time: string | Date): string => (typeof time === 'string' ? time : time.toISOString()).slice(0, 10);

export type DayDelta = { app_id: string; day: string; n: number };

/**
 * Sums changes to count rows: `add` one row's change (rows with the same values are one),
 * `changes()` the sums that do not cancel out, in the order first added.
 */
export function tally<Row extends Record<string, string | boolean>>() {
  const sums = new Map<string, Row & { n: number }>();
  return {
    add(row: Row, n: number) {
      const k = Object.keys(row)
        .sort()
        .map((field) => row[field])
        .join('\u0000');
      const sum = sums.get(k) ?? { ...row, n: 0 };
      sum.n += n;
      sums.set(k, sum);
    },
    changes: () => [...sums.values()].filter((sum) => sum.n !== 0),
  };
}

/**
 * Changes to the per-day counts when rows are placed on days: a new row adds one to its day; an
 * existing row whose time moves to another day (a corrected or newer snapshot re-files it) moves
 * from its old day to the new one.
 */
export function dayCountDeltas(rows: { app_id: string; key: string; day: string; previousDay?: string }[]): DayDelta[] {
  const deltas = tally<{ app_id: string; day: string }>();
  for (const row of rows) {
    if (row.previousDay === undefined) deltas.add({ app_id: row.app_id, day: row.day }, 1);
    else if (row.day !== row.previousDay) {
      deltas.add({ app_id: row.app_id, day: row.previousDay }, -1);
      deltas.add({ app_id: row.app_id, day: row.day }, 1);
    }
  }
  return deltas.changes().sort((a, b) => (a.app_id === b.app_id ? (a.day < b.day ? -1 : 1) : a.app_id < b.app_id ? -1 : 1));
}

/** Where a transaction is counted for the filters (transaction_filter_day_counts): its day and the values they read. */
export type FilterCell = { day: string; product_id: string; platform: string; sandbox: boolean };
export type FilterCountDelta = FilterCell & { app_id: string; n: number };

/** sandbox as the filter reads it: a row whose event did not say counts as production. */
export const filterCellOf = (t: { occurred_at: string; product_id: string; platform: string; sandbox: boolean | null }): FilterCell => ({
  day: utcDay(t.occurred_at),
  product_id: t.product_id,
  platform: t.platform,
  sandbox: t.sandbox === true,
});

/**
 * Changes to the filter counts: a new row adds one to its cell; a rewritten row whose day or
 * filtered values changed moves from its old cell to the new one. Unordered: the statement that
 * stores them orders the rows it locks.
 */
export function filterCountDeltas(rows: { app_id: string; cell: FilterCell; previous?: FilterCell }[]): FilterCountDelta[] {
  const deltas = tally<FilterCell & { app_id: string }>();
  const same = (a: FilterCell, b: FilterCell) => a.day === b.day && a.product_id === b.product_id && a.platform === b.platform && a.sandbox === b.sandbox;
  for (const row of rows) {
    if (row.previous === undefined) deltas.add({ app_id: row.app_id, ...row.cell }, 1);
    else if (!same(row.cell, row.previous)) {
      deltas.add({ app_id: row.app_id, ...row.previous }, -1);
      deltas.add({ app_id: row.app_id, ...row.cell }, 1);
    }
  }
  return deltas.changes();
}

/**
 * Day changes summed per app and day: the filter-count changes add up to the day counts' (a row
 * moved between cells of one day leaves its day alone), and an erasure's add to the batch's own.
 */
export function sumDayDeltas(deltas: readonly DayDelta[]): DayDelta[] {
  const days = tally<{ app_id: string; day: string }>();
  for (const d of deltas) days.add({ app_id: d.app_id, day: d.day }, d.n);
  return days.changes();
}
