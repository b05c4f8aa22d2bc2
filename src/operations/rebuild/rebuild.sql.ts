// SQL of the rebuild: generations are schemas shaped like the live `read_model` (LIKE ... INCLUDING
// ALL copies columns, defaults, keys and indexes, so a table added by a migration is included).

export const rebuildSql = {
  tryLock: `SELECT pg_try_advisory_lock($1) AS locked`,
  unlock: `SELECT pg_advisory_unlock($1)`,
  // Advisory locks are per database: another database's rebuild on the same server holds its own.
  lockHolder: `
    SELECT a.application_name, a.backend_start, a.client_addr::text AS client_addr
    FROM pg_locks l JOIN pg_stat_activity a ON a.pid = l.pid
    WHERE l.locktype = 'advisory' AND l.granted AND l.classid = 0 AND l.objid = $1
      AND l.database = (SELECT oid FROM pg_database WHERE datname = current_database())`,
  liveTables: `
    SELECT table_name FROM information_schema.tables
    WHERE table_schema = 'read_model' AND table_type = 'BASE TABLE' ORDER BY table_name`,
  running: `SELECT id::text, kind, schema_name, target_offsets, started_at, changes_from::text FROM public.rebuilds WHERE status = 'running' AND schema_name = $1`,
  anyRunning: `SELECT id::text, kind, schema_name FROM public.rebuilds WHERE status = 'running' ORDER BY id`,
  start: `
    INSERT INTO public.rebuilds (kind, schema_name, status, target_offsets, owner, changes_from)
    VALUES ($1, $2, 'running', $3::jsonb, $4, $5) RETURNING id::text`,
  finish: `UPDATE public.rebuilds SET status = $2, finished_at = now(), report = $3::jsonb WHERE id = $1::bigint`,
  offsets: (schema: string) => `SELECT partition, next_offset::text AS next_offset FROM ${schema}.projection_offsets WHERE topic = $1`,
  bumpGeneration: `
    WITH g AS (UPDATE public.read_model_generation SET generation = generation + 1, switched_at = now() RETURNING generation)
    SELECT generation FROM g`,
  generation: `SELECT generation, switched_at FROM public.read_model_generation`,
};
