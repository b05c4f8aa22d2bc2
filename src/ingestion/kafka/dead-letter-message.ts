import type { Message } from 'kafkajs';
import type { DeadLetter } from '../../events/log-batch.js';

/** Room for the record batch and record framing around key, value and headers. */
const FRAMING_BYTES = 1024;

/**
 * The `<topic>.dlq` copy of a refused message: the original key and value with headers saying why
 * and where it came from. A copy that would not fit the broker's limit (the original was near it,
 * and the headers add to it) is truncated and says so, so dead-lettering cannot fail on content.
 */
export function fitDeadLetter(d: DeadLetter, maxMessageBytes: number): Message {
  const headers: Record<string, string> = {
    'dlq-reason-code': d.code,
    'dlq-reason': d.reason.slice(0, 2048),
    'dlq-source-topic': d.topic,
    'dlq-source-partition': String(d.partition),
    'dlq-source-offset': d.offset,
  };
  const headerBytes = (h: Record<string, string>) => Object.entries(h).reduce((n, [k, v]) => n + Buffer.byteLength(k) + Buffer.byteLength(v) + 8, 0);
  const room = maxMessageBytes - FRAMING_BYTES - (d.key?.length ?? 0) - headerBytes(headers) - 64;
  if (d.value.length <= room) return { key: d.key, value: d.value, headers };
  return {
    key: d.key,
    value: d.value.subarray(0, Math.max(0, room)),
    headers: { ...headers, 'dlq-truncated': 'true', 'dlq-original-bytes': String(d.value.length) },
  };
}
