/** A UTC day, YYYY-MM-DD, from a normalised event time string or a Date read back from PostgreSQL. */
export const utcDay = (time: string | Date): string => (typeof time === 'string' ? time : time.toISOString()).slice(0, 10);

export type DayDelta = { app_id: string; day: string; n: number };

/**
 * Changes to the per-day counts when rows are placed on days: a new row adds one to its day; an
 * existing row whose time moves to another day (a corrected or newer snapshot re-files it) moves
 * from its old day to the new one.
 */
export function dayCountDeltas(rows: { app_id: string; key: string; day: string; previousDay?: string }[]): DayDelta[] {
  const deltas = new Map<string, DayDelta>();
  const add = (app_id: string, day: string, n: number) => {
    const k = `${app_id}\u0000${day}`;
    const d = deltas.get(k) ?? { app_id, day, n: 0 };
    d.n += n;
    deltas.set(k, d);
  };
  for (const row of rows) {
    if (row.previousDay === undefined) add(row.app_id, row.day, 1);
    else if (row.day !== row.previousDay) {
      add(row.app_id, row.previousDay, -1);
      add(row.app_id, row.day, 1);
    }
  }
  return [...deltas.values()]
    .filter((d) => d.n !== 0)
    .sort((a, b) => (a.app_id === b.app_id ? (a.day < b.day ? -1 : 1) : a.app_id < b.app_id ? -1 : 1));
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
  const deltas = new Map<string, FilterCountDelta>();
  const add = (app_id: string, c: FilterCell, n: number) => {
    const k = [app_id, c.product_id, c.platform, c.sandbox ? 't' : 'f', c.day].join('\u0000');
    const d = deltas.get(k) ?? { app_id, ...c, n: 0 };
    d.n += n;
    deltas.set(k, d);
  };
  const same = (a: FilterCell, b: FilterCell) => a.day === b.day && a.product_id === b.product_id && a.platform === b.platform && a.sandbox === b.sandbox;
  for (const row of rows) {
    if (row.previous === undefined) add(row.app_id, row.cell, 1);
    else if (!same(row.cell, row.previous)) {
      add(row.app_id, row.previous, -1);
      add(row.app_id, row.cell, 1);
    }
  }
  return [...deltas.values()].filter((d) => d.n !== 0);
}

/**
 * Day changes summed per app and day: the filter-count changes add up to the day counts' (a row
 * moved between cells of one day leaves its day alone), and an erasure's add to the batch's own.
 */
export function sumDayDeltas(deltas: readonly DayDelta[]): DayDelta[] {
  const days = new Map<string, DayDelta>();
  for (const c of deltas) {
    const k = `${c.app_id}\u0000${c.day}`;
    const d = days.get(k) ?? { app_id: c.app_id, day: c.day, n: 0 };
    d.n += c.n;
    days.set(k, d);
  }
  return [...days.values()].filter((d) => d.n !== 0);
}
