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
  // A parameter per key and value: node-postgres sends a Buffer parameter as binary, where a bytea[]
  // goes as text, every value in hex (twice its size, and held whole while the statement is built).
  append: (count: number) => `
    INSERT INTO public.event_log (topic, partition, "offset", key, value)
    VALUES ${Array.from({ length: count }, (_, i) => `($1, $2, $3::bigint + ${i}, $${4 + 2 * i}::text, $${5 + 2 * i}::bytea)`).join(', ')}`,
  notify: `SELECT pg_notify('${NOTIFY_CHANNEL}', $1)`,
  // ORDER BY names the table column: the bare name would bind to the text alias and sort "10" < "9".
  // A message's size (octet_length of a stored value reads its header, not the value) decides
  // whether its key and value are sent at all: not when it is over $5 bytes (too large), nor when
  // the messages before it already take $6 bytes (the first one always fits the batch).
  read: `
    SELECT "offset"::text AS "offset", bytes::text AS bytes, "timestamp",
           CASE WHEN loaded THEN key END AS key, CASE WHEN loaded THEN value END AS value
    FROM (
      SELECT l."offset", l.key, l.value, s.bytes, (extract(epoch FROM l.appended_at) * 1000)::bigint::text AS "timestamp",
             s.bytes <= $5::bigint AND sum(s.bytes) OVER (ORDER BY l."offset") - s.bytes < $6::bigint AS loaded
      FROM public.event_log l, LATERAL (SELECT octet_length(l.value) + coalesce(octet_length(l.key), 0) AS bytes) s
      WHERE l.topic = $1 AND l.partition = $2 AND l."offset" >= $3
      ORDER BY l."offset" LIMIT $4
    ) m
    ORDER BY m."offset"`,
  /** What the dead letter of a message too large to read keeps: its size and the first $4 bytes of key and value. */
  readHead: `
    SELECT octet_length(value) + coalesce(octet_length(key), 0) AS bytes,
           substring(convert_to(key, 'UTF8') FROM 1 FOR $4) AS key, substring(value FROM 1 FOR $4) AS value
    FROM public.event_log WHERE topic = $1 AND partition = $2 AND "offset" = $3`,
  bounds: `
    SELECT coalesce((SELECT min("offset") FROM public.event_log WHERE topic = $1 AND partition = $2), h.next_offset)::text AS low,
           h.next_offset::text AS high
    FROM public.event_log_heads h WHERE h.topic = $1 AND h.partition = $2`,
  endOffsets: `SELECT partition, next_offset::text AS next_offset FROM public.event_log_heads WHERE topic = $1 ORDER BY partition`,
};
