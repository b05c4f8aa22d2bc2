/** Per-day row counts of one filtered listing, in order, with the partial edge days already exact. */
export type DayCount = { day: string; n: number };

export type PageStart = { total: number } & ({ empty: true } | { empty: false; from: Date; offset: number });

const DAY_MS = 86_400_000;
export const dayStart = (day: string) => new Date(`${day}T00:00:00.000Z`);
export const dayOf = (date: Date) => date.toISOString().slice(0, 10);
/** The UTC day holding the instant just before `end` (an exclusive bound). */
export const lastDayBefore = (end: Date) => dayOf(new Date(end.getTime() - 1));
export const nextDayStart = (day: string) => new Date(dayStart(day).getTime() + DAY_MS);

/**
 * Where page `skip` starts: the running sum over the day counts finds the day holding row `skip`,
 * so the row query only has to OFFSET within that day. The total is the sum of all days.
 */
export function locatePage(days: readonly DayCount[], skip: number, lowerBound?: Date): PageStart {
  const total = days.reduce((sum, d) => sum + d.n, 0);
  let before = 0;
  for (const d of days) {
    if (before + d.n > skip) {
      const start = dayStart(d.day);
      return { total, empty: false, from: lowerBound && lowerBound > start ? lowerBound : start, offset: skip - before };
    }
    before += d.n;
  }
  return { total, empty: true };
}
