// public.fx_rates (docs/exchange-rates.md): reference data the operator loads, written only here.

export const fxRatesSql = {
  /**
   * $1 currencies, $2 days, $3 units per euro (one triple per rate): new rates inserted, a rate the
   * file gives otherwise replaced, an equal one left alone (so a file loaded twice writes nothing).
   * Returns one row per rate written: `inserted` true for a new one, false for a replaced one, and its day.
   */
  upsert: `
    INSERT INTO public.fx_rates AS r (currency, day, per_eur)
    SELECT * FROM unnest($1::text[], $2::date[], $3::numeric[])
    ON CONFLICT (currency, day) DO UPDATE SET per_eur = excluded.per_eur
    WHERE r.per_eur <> excluded.per_eur
    RETURNING (r.xmax = 0) AS inserted, r.day::text AS day`,
};
