// Connections and sends the benchmark scripts share.
import pg from 'pg';
// The service's filter of kafkajs's TimeoutNegativeWarning on Node 24+ (kafkajs#1751), for the
// scripts' own producers and admins too.
import '../dist/ingestion/kafka/kafka-client.js';

/**
 * A client of `url` once the server takes it, e.g. a standby that has yet to replay the database's
 * creation: a pg.Client connects only once, so each try is a new one. Tries every 100 ms.
 */
export async function connectWhenReady(url, tries = 300) {
  for (let i = 0; ; i++) {
    const client = new pg.Client({ connectionString: url });
    try {
      await client.connect();
      return client;
    } catch (error) {
      await client.end().catch(() => {});
      if (i >= tries) throw error;
      await new Promise((r) => setTimeout(r, 100));
    }
  }
}

/** Sends generated events keyed by receipt, 5,000 per request, each acknowledged by all replicas. */
export async function sendEvents(producer, topic, events) {
  let batch = [];
  for (const event of events) {
    batch.push({ key: event.data.receiptId, value: JSON.stringify(event) });
    if (batch.length === 5000) {
      await producer.send({ topic, acks: -1, messages: batch });
      batch = [];
    }
  }
  if (batch.length) await producer.send({ topic, acks: -1, messages: batch });
}
