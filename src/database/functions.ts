import { FEED_TABLES, stampFunctionSql } from '../change-feed/change-positions.sql.js';
import { USD_AMOUNT_SQL, USD_RATE_SQL } from '../revenue/usd-functions.js';

// The database functions the service relies on, declared once, as the current release wants them
// (immich server/src/schema/functions.ts). A migration never imports these: it carries the text as
// of its release. test/database/functions.int-spec.ts holds a migrated database's functions to
// these declarations, so a change here without the migration that installs it fails there.

export type DatabaseFunction = { signature: string; sql: string };

/** HMAC-SHA256 of (app, name) under public.erasure_key, the keyed hash erasures are stored by (docs/privacy.md). */
const ERASURE_HASH = `
      CREATE OR REPLACE FUNCTION public.erasure_hash(app text, name text) RETURNS text LANGUAGE sql STABLE PARALLEL SAFE AS $$
        SELECT CASE WHEN name ~ '^erased:[0-9a-f]{64}$' THEN substr(name, 8)
          ELSE encode(sha256(k.outer_pad || sha256(k.inner_pad || convert_to(app, 'UTF8') || '\\x00'::bytea || convert_to(name, 'UTF8'))), 'hex') END
        FROM public.erasure_key k
      $$`;

export const DATABASE_FUNCTIONS: readonly DatabaseFunction[] = [
  ...FEED_TABLES.map((table) => ({ signature: `public.stamp_${table}_change()`, sql: stampFunctionSql(table) })),
  { signature: 'public.erasure_hash(text, text)', sql: ERASURE_HASH },
  { signature: 'public.usd_rate(text, date)', sql: USD_RATE_SQL },
  { signature: 'public.usd_amount(numeric, text, timestamp with time zone)', sql: USD_AMOUNT_SQL },
];
