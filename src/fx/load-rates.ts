import type { DataSource } from 'typeorm';
import type { FxRate } from './ecb-rates.js';
import { fxRatesSql } from './fx-rates.sql.js';
import { revenueMonthsSql } from '../revenue/revenue-months.sql.js';
import { rederiveMonthsAfterRates } from '../revenue/revenue-months.js';

/** Rates per statement: the whole history (~7,000 days × ~30 currencies) is some 40 statements. */
export const LOAD_CHUNK = 5_000;

export type LoadCounts = { inserted: number; changed: number; unchanged: number };

/**
 * Stores a parsed file's rates in one transaction: all of them or, if a statement fails, none.
 * A rate already stored with the same value is left as it is, so loading a file again changes nothing.
 */
export async function loadRates(db: DataSource, rows: readonly FxRate[], chunk = LOAD_CHUNK): Promise<LoadCounts> {
  return db.transaction(async (m) => {
    const counts: LoadCounts = { inserted: 0, changed: 0, unchanged: 0 };
    // the days of the rates actually written: a history file loaded again with one new day re-derives that day's months only
    let firstWritten: string | undefined;
    let lastWritten: string | undefined;
    for (let i = 0; i < rows.length; i += chunk) {
      const part = rows.slice(i, i + chunk);
      const written = (await m.query(fxRatesSql.upsert, [part.map((r) => r.currency), part.map((r) => r.day), part.map((r) => r.perEur)])) as {
        inserted: boolean;
        day: string;
      }[];
      for (const w of written) {
        if (firstWritten === undefined || w.day < firstWritten) firstWritten = w.day;
        if (lastWritten === undefined || w.day > lastWritten) lastWritten = w.day;
      }
      const inserted = written.filter((w) => w.inserted).length;
      counts.inserted += inserted;
      counts.changed += written.length - inserted;
      counts.unchanged += part.length - written.length;
    }
    // the USD months those rates reach, live and in a generation being built, with the rates held so no batch re-derives meanwhile
    if (firstWritten !== undefined && lastWritten !== undefined) {
      await m.query(revenueMonthsSql('read_model').holdRates);
      for (const { schema } of (await m.query(revenueMonthsSql('read_model').generations)) as { schema: string }[])
        await rederiveMonthsAfterRates(m, schema, firstWritten, lastWritten);
    }
    return counts;
  });
}
