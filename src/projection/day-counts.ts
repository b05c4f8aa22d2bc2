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
