// UTC day arithmetic for the per-day count tables.
const DAY_MS = 86_400_000;
export const dayStart = (day: string) => new Date(`${day}T00:00:00.000Z`);
export const dayOf = (date: Date) => date.toISOString().slice(0, 10);
/** The UTC day holding the instant just before `end` (an exclusive bound). */
export const lastDayBefore = (end: Date) => dayOf(new Date(end.getTime() - 1));
export const nextDayStart = (day: string) => new Date(dayStart(day).getTime() + DAY_MS);
