import type { DataSource } from 'typeorm';
import type { FxRate } from './ecb-rates.js';
import { fxRatesSql } from './fx-rates.sql.js';

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
    for (let i = 0; i < rows.length; i += chunk) {
      const part = rows.slice(i, i + chunk);
      const written = (await m.query(fxRatesSql.upsert, [part.map((r) => r.currency), part.map((r) => r.day), part.map((r) => r.perEur)])) as {
        inserted: boolean;
      }[];
      const inserted = written.filter((w) => w.inserted).length;
      counts.inserted += inserted;
      counts.changed += written.length - inserted;
      counts.unchanged += part.length - written.length;
    }
    return counts;
  });
}
