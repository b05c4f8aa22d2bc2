import type { DataSource } from 'typeorm';
import { applyBatch } from '../../src/projection/apply-batch.js';
import { type BatchOutcome } from '../../src/events/log-batch.js';
import { snapshotReadModels } from './read-models.js';

// Given / when / then for the projection, with redelivery built in (Emmett's postgresProjectionSpec:
// given(events).when(events, { numberOfTimes }).then(assert)). Events go through the projection's own
// write path, one batch per given or when, on a partition of their own. `when` delivers its events
// `numberOfTimes` times (2 unless told): after the first delivery, each further one is sent again at
// the same offsets (a consumer that lost its commit) and then at new offsets (a producer that
// retried), and the read models must be what the first delivery left. Only then does `then` look.

const TOPIC = 'projection-spec';
const nextOffset = new WeakMap<DataSource, number>();

async function deliver(db: DataSource, events: readonly unknown[], at?: number): Promise<{ outcome: BatchOutcome; from: number }> {
  const from = at ?? nextOffset.get(db) ?? 0;
  if (at === undefined) nextOffset.set(db, from + events.length);
  const messages = events.map((e, i) => ({ offset: String(from + i), key: null, value: Buffer.from(typeof e === 'string' ? e : JSON.stringify(e)) }));
  const outcome = await applyBatch(db, { topic: TOPIC, partition: 0, messages });
  if (outcome.kind !== 'applied') throw new Error(`the projection refused the batch at ${from}: ${JSON.stringify(outcome)}`);
  return { outcome, from };
}

export type When = {
  /** Asserts on the database once every delivery is done; gets the first delivery's outcome. */
  then(assert: (db: DataSource, outcome: BatchOutcome) => Promise<void> | void): Promise<void>;
  /** The events changed no read-model row (nor a kept count). */
  thenNothingChanged(): Promise<void>;
};

export function projectionSpec(db: () => DataSource) {
  return {
    given(...given: unknown[][]) {
      return {
        when(events: unknown[], { numberOfTimes = 2 }: { numberOfTimes?: number } = {}): When {
          const run = async () => {
            for (const batch of given) await deliver(db(), batch);
            const before = await snapshotReadModels(db());
            const first = await deliver(db(), events);
            const once = await snapshotReadModels(db());
            for (let i = 1; i < numberOfTimes; i++) {
              await deliver(db(), events, first.from);
              await deliver(db(), events);
              expect({ redelivery: i, readModels: await snapshotReadModels(db()) }).toEqual({ redelivery: i, readModels: once });
            }
            return { before, once, outcome: first.outcome };
          };
          return {
            async then(assert) {
              const { outcome } = await run();
              await assert(db(), outcome);
            },
            async thenNothingChanged() {
              const { before, once } = await run();
              expect(once).toEqual(before);
            },
          };
        },
      };
    },
  };
}
