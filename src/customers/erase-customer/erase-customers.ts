import { randomUUID } from 'node:crypto';
import type { DataSource } from 'typeorm';
import { normalizeTime } from '../../events/event-time.js';
import { REDACTED_PREFIX, erasureHash, erasureKey } from './erasure-hash.js';
import { forgetAccountTokens } from '../account-tokens/account-tokens.js';
import { forgetKeys } from '../crypto-shredding/forget-keys.js';

export type ErasureRequest = {
  appId: string;
  usernames: readonly string[];
  /** The token's subject (API) or the operating-system user (CLI): recorded in the audit, with no username. */
  subject: string | undefined;
  via: 'api' | 'cli';
  /** Appends the erasure events to the log the service consumes (Kafka topic or embedded log). */
  send: (messages: { key: string; value: Buffer }[]) => Promise<void>;
  /** The embedded log's topic when the service consumes the embedded log (its stored events are redacted); undefined on Kafka. */
  embeddedTopic?: string;
  now?: Date;
};

export type ErasureResult = { eventIds: string[]; redactedEvents: number; redactedDeadLetters: number };

export const ERASURE_SOURCE = 'subscription-records/erasure';
/** Usernames one request may erase (the API takes one, the CLI chunks its file by this). */
export const MAX_ERASURES_PER_CALL = 1000;

/**
 * Forgets customers (docs/privacy.md): appends one customer.erased event per username, carrying
 * only its keyed hash, records the audit rows, and redacts the username where the service stored it
 * outside the read models: the embedded log's events dated at or before the erasure (in place:
 * `erased:<hash>`, which replays as naming no one) and the dead letters (every occurrence), and
 * deletes their crypto-shredding key. The read models follow when the projection applies the event, on every replay alike.
 */
export async function eraseCustomers(db: DataSource, request: ErasureRequest): Promise<ErasureResult> {
  const key = await erasureKey(db);
  const time = (request.now ?? new Date()).toISOString();
  const unique = [...new Set(request.usernames)];
  const events = unique.map((name) => ({
    name,
    hash: erasureHash(key, request.appId, name),
    id: `erasure-${randomUUID()}`,
  }));
  await request.send(
    events.map((e) => ({
      key: 'customer.erased',
      value: Buffer.from(
        JSON.stringify({
          specversion: '1.0',
          id: e.id,
          source: ERASURE_SOURCE,
          type: 'customer.erased',
          time,
          appid: request.appId,
          datacontenttype: 'application/json',
          data: { usernameHash: e.hash },
        }),
      ),
    })),
  );
  await db.query(`INSERT INTO public.erasure_audit (app_id, event_id, subject, via, requested_at) SELECT $1, e, $2, $3, $4 FROM unnest($5::text[]) AS e`, [
    request.appId,
    request.subject ?? null,
    request.via,
    time,
    events.map((e) => e.id),
  ]);
  // Crypto-shredding: the events the service published sealed for them can no longer be opened
  // (docs/privacy.md). After the append: a failed append leaves the key, so a retry finds it whole.
  await forgetKeys(
    db,
    request.appId,
    events.map((e) => e.hash),
  );
  await forgetAccountTokens(
    db,
    request.appId,
    events.map((e) => e.hash),
  );
  let redactedEvents = 0;
  let redactedDeadLetters = 0;
  const cutoff = normalizeTime(time)!;
  for (const e of events) {
    if (request.embeddedTopic !== undefined)
      redactedEvents += await redactEventLog(db, request.embeddedTopic, request.appId, e.name, `${REDACTED_PREFIX}${e.hash}`, cutoff);
    redactedDeadLetters += await redactDeadLetters(db, e.name, `${REDACTED_PREFIX}${e.hash}`);
  }
  return { eventIds: events.map((e) => e.id), redactedEvents, redactedDeadLetters };
}

/** The spellings of `name` a stored message can hold: UTF-8 as is, and as JSON.stringify escapes it. */
const spellings = (name: string) => [...new Set([name, JSON.stringify(name).slice(1, -1)])].map((s) => Buffer.from(s, 'utf8'));

/**
 * Events of the application naming the customer (a transaction's or a link's applicationUsername)
 * dated at or before the erasure: the username becomes `erased:<hash>`. A later event naming the
 * same username is a new customer's (docs/privacy.md) and stays. Scans the log once per username.
 */
async function redactEventLog(db: DataSource, topic: string, appId: string, name: string, replacement: string, cutoff: string): Promise<number> {
  const candidates = (await db.query(
    `SELECT "offset"::text AS "offset", partition, value FROM public.event_log
     WHERE topic = $1 AND (position($2::bytea IN value) > 0 OR position($3::bytea IN value) > 0)`,
    [topic, ...padTwo(spellings(name))],
  )) as { offset: string; partition: number; value: Buffer }[];
  let redacted = 0;
  for (const c of candidates) {
    let event: { appid?: unknown; time?: unknown; type?: unknown; data?: { applicationUsername?: unknown } };
    try {
      event = JSON.parse(c.value.toString('utf8'));
    } catch {
      continue;
    }
    const at = typeof event.time === 'string' ? normalizeTime(event.time) : undefined;
    if (event.appid !== appId || event.data?.applicationUsername !== name || !at || at > cutoff) continue;
    event.data.applicationUsername = replacement;
    await db.query(`UPDATE public.event_log SET value = $4 WHERE topic = $1 AND partition = $2 AND "offset" = $3::bigint`, [
      topic,
      c.partition,
      c.offset,
      Buffer.from(JSON.stringify(event)),
    ]);
    redacted++;
  }
  return redacted;
}

/** Dead letters are whatever bytes were refused: every occurrence of the name goes, in value, key and reason. */
async function redactDeadLetters(db: DataSource, name: string, replacement: string): Promise<number> {
  const forms = spellings(name);
  // key is bytea (migration 1764100000000: a refused message's key need not be UTF-8).
  const rows = (await db.query(
    `SELECT id::text, value, key, reason FROM public.dead_letters
     WHERE position($1::bytea IN value) > 0 OR position($2::bytea IN value) > 0 OR position($1::bytea IN coalesce(key, ''::bytea)) > 0
       OR position($2::bytea IN coalesce(key, ''::bytea)) > 0 OR strpos(reason, $3) > 0`,
    [...padTwo(forms), name],
  )) as { id: string; value: Buffer; key: Buffer | null; reason: string }[];
  for (const r of rows) {
    let value = r.value;
    let key = r.key;
    for (const form of forms) {
      value = replaceBytes(value, form, Buffer.from(replacement));
      if (key !== null) key = replaceBytes(key, form, Buffer.from(replacement));
    }
    await db.query(`UPDATE public.dead_letters SET value = $2, key = $3, reason = $4 WHERE id = $1::bigint`, [
      r.id,
      value,
      key,
      r.reason.replaceAll(name, replacement).replaceAll(JSON.stringify(name).slice(1, -1), replacement),
    ]);
  }
  return rows.length;
}

const padTwo = (forms: Buffer[]) => [forms[0], forms[1] ?? forms[0]];

function replaceBytes(haystack: Buffer, needle: Buffer, by: Buffer): Buffer {
  const parts: Buffer[] = [];
  let from = 0;
  for (let at = haystack.indexOf(needle, from); at >= 0; at = haystack.indexOf(needle, from)) {
    parts.push(haystack.subarray(from, at), by);
    from = at + needle.length;
  }
  if (from === 0) return haystack;
  parts.push(haystack.subarray(from));
  return Buffer.concat(parts);
}
