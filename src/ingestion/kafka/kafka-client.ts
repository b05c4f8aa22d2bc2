import { Kafka, logLevel, type Admin, type LogEntry, type SASLOptions } from 'kafkajs';
import { Logger } from '@nestjs/common';
import type { KafkaSettings } from '../../config/app-config.js';

const LEVELS: Record<number, 'error' | 'warn' | 'log' | 'debug'> = {
  [logLevel.ERROR]: 'error',
  [logLevel.WARN]: 'warn',
  [logLevel.INFO]: 'log',
  [logLevel.DEBUG]: 'debug',
};

const CONNECTION_NAMESPACES = new Set(['Connection', 'BrokerPool', 'Cluster', 'Runner', 'ConsumerGroup']);

// kafkajs 2.2.4 schedules its request queue's next check at `throttledUntil - Date.now()` with
// throttledUntil -1 when unthrottled; Node 24+ warns on every such timer (TimeoutNegativeWarning,
// tulios/kafkajs#1751, unfixed upstream). Node clamps it to 1 ms, the immediate check kafkajs
// means, so only that warning from that caller is dropped; any other still reaches stderr.
const emitWarning = process.emitWarning;
process.emitWarning = function (this: NodeJS.Process, warning: string | Error, ...rest: unknown[]) {
  const type = typeof rest[0] === 'string' ? rest[0] : (rest[0] as { type?: string } | undefined)?.type;
  if (type === 'TimeoutNegativeWarning' && /kafkajs[\\/]src[\\/]network[\\/]requestQueue/.test(new Error().stack ?? '')) return;
  return (emitWarning as (...args: unknown[]) => void).call(this, warning, ...rest);
} as typeof process.emitWarning;

export function createKafka(settings: KafkaSettings, clientIdSuffix = ''): Kafka {
  const logger = new Logger('kafkajs');
  return new Kafka({
    clientId: settings.clientId + clientIdSuffix,
    brokers: settings.brokers,
    ssl: settings.ssl,
    sasl: settings.sasl as SASLOptions | undefined,
    connectionTimeout: 5000,
    // Short: the consumer restarts itself after a failed start, and a stopping process should not linger.
    retry: { initialRetryTime: 300, retries: 3, maxRetryTime: 2_000 },
    logLevel: logLevel.WARN,
    logCreator:
      () =>
      ({ namespace, level, log }: LogEntry) => {
        const { message, ...extra } = log;
        // Connection failures repeat on every retry while a broker is away; the consumer reports the
        // outage once as a state change (connecting, with the reason), so these go to debug.
        const repeats = CONNECTION_NAMESPACES.has(namespace) || /ECONNREFUSED|Connection error|Failed to connect|Crash/i.test(message);
        logger[repeats ? 'debug' : (LEVELS[level] ?? 'log')]({ namespace, ...extra, msg: message });
      },
  });
}

export const dlqTopic = (topic: string) => `${topic}.dlq`;

/**
 * The topic and its dead-letter topic, created when missing (with the broker's default partition
 * count), as the consumer does on start and move-to-kafka before its copy. Returns the topics it
 * created. A failure to create them goes to `onCreateFailed` when given (the consumer expects them
 * to exist then), else it throws.
 */
export async function ensureTopics(admin: Admin, topic: string, onCreateFailed?: (error: Error, topics: string[]) => void): Promise<string[]> {
  const existing = new Set(await admin.listTopics());
  const wanted = [topic, dlqTopic(topic)].filter((t) => !existing.has(t));
  if (wanted.length === 0) return [];
  try {
    await admin.createTopics({ topics: wanted.map((t) => ({ topic: t })), waitForLeaders: true });
  } catch (error) {
    if (!onCreateFailed) throw error;
    onCreateFailed(error as Error, wanted);
    return [];
  }
  return wanted;
}
