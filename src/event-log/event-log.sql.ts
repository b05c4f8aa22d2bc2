// The embedded event log: an append-only table with Kafka-like (topic, partition, offset)
// addressing, used when KAFKA_BROKERS is unset. Appenders lock the partition's head row, so offsets
// are dense and become visible in order; a reader never skips an offset that commits late.

export const NOTIFY_CHANNEL = 'event_log_appended';

export const eventLogSql = {
  ensureHead: `
    INSERT INTO public.event_log_heads (topic, partition, next_offset) VALUES ($1, $2, 0)
    ON CONFLICT (topic, partition) DO NOTHING`,
  // Wrapped in a SELECT: TypeORM hands back [rows, count] for a bare UPDATE ... RETURNING.
  reserve: `
    WITH head AS (
      UPDATE public.event_log_heads SET next_offset = next_offset + $3::bigint
      WHERE topic = $1 AND partition = $2
      RETURNING next_offset - $3::bigint AS first_offset
    )
    SELECT first_offset::text AS first_offset FROM head`,
  append: `
    INSERT INTO public.event_log (topic, partition, "offset", key, value)
    SELECT $1, $2, $3::bigint + m.ord - 1, m.key, m.value
    FROM unnest($4::text[], $5::bytea[]) WITH ORDINALITY AS m(key, value, ord)`,
  notify: `SELECT pg_notify('${NOTIFY_CHANNEL}', $1)`,
  // ORDER BY names the table column: the bare name would bind to the text alias and sort "10" < "9".
  read: `
    SELECT l."offset"::text AS "offset", l.key, l.value, (extract(epoch FROM l.appended_at) * 1000)::bigint::text AS "timestamp"
    FROM public.event_log l
    WHERE l.topic = $1 AND l.partition = $2 AND l."offset" >= $3
    ORDER BY l."offset" LIMIT $4`,
  bounds: `
    SELECT coalesce((SELECT min("offset") FROM public.event_log WHERE topic = $1 AND partition = $2), h.next_offset)::text AS low,
           h.next_offset::text AS high
    FROM public.event_log_heads h WHERE h.topic = $1 AND h.partition = $2`,
  endOffsets: `SELECT partition, next_offset::text AS next_offset FROM public.event_log_heads WHERE topic = $1 ORDER BY partition`,
};
