import { createHmac, createSecretKey, timingSafeEqual, type KeyObject } from 'node:crypto';
import type { DataSource } from 'typeorm';
import { InvalidParameterError } from '../common/errors.js';
import { FEED_START, type ChangeCursor } from './change-cursor.js';
import type { FeedTable } from './change-positions.sql.js';

/**
 * The cursors clients hold (`paging.next`, `changedAfter`), signed so that the service only ever
 * reads from a position it handed out itself (docs/change-feed.md, "Cursors"). A cursor is
 *
 *   base64url( version 0x01 | position: 8 bytes, big-endian | row key: UTF-8 | MAC: 16 bytes )
 *   base64url( version 0x02 | position: 8 bytes | origin: 8 bytes | row key: UTF-8 | MAC: 16 bytes )
 *
 * (0x02 when the cursor carries an origin: where the client began reading, so deletion entries from
 * before it are not shown to it; docs/change-feed.md, "Deletions").
 *
 * where MAC is HMAC-SHA-256, cut to 128 bits, over the listing, the application and everything before
 * it, under the key stored in `public.change_feed_cursor_key`. No clock and no database state other
 * than that key go into checking one: a cursor is as good on any instance, after any restart, and on
 * a replica that has not yet caught up with the instance that issued it.
 */
const VERSION = 0x01;
const VERSION_WITH_ORIGIN = 0x02;
const POSITION_BYTES = 8;
const MAC_BYTES = 16;
const MAX_POSITION = 2n ** 63n - 1n;
/** The longest `changedAfter` read at all (characters). Issued cursors stay far below it: row keys are at most 512 characters (2 kB of UTF-8). */
export const MAX_CURSOR_LENGTH = 4096;
const BASE64URL = /^[A-Za-z0-9_-]+$/;
/** Cursors before signing: base64url of "position:key". */
const UNSIGNED = /^\d{1,19}:/;
const utf8 = new TextDecoder('utf-8', { fatal: true });

/** Why any changedAfter the service did not issue is refused, and what the client does about it. */
export const notACursor = (parameter = 'changedAfter') =>
  new InvalidParameterError(
    parameter,
    `${parameter} must be 0 or the paging.next of an earlier response of this listing, unchanged; ` +
      `restart from ${parameter}=0 or from the last cursor that worked (docs/change-feed.md)`,
  );

export class CursorSigner {
  /** A KeyObject, made once: given bytes, createHmac makes one per call, most of an HMAC's cost (bench/notes.md, "HMAC keys"). */
  private readonly key: KeyObject;

  constructor(key: Buffer) {
    if (key.length < 32) throw new Error('the change-feed cursor key must be at least 32 bytes');
    this.key = createSecretKey(key);
  }

  /** The cursor standing after `c` in the `feed` listing of `appId`. The same input gives the same cursor. */
  issue(feed: FeedTable, appId: string, c: ChangeCursor): string {
    const position = Buffer.alloc(POSITION_BYTES);
    position.writeBigUInt64BE(BigInt(c.position));
    const origin = Buffer.alloc(c.origin === undefined ? 0 : POSITION_BYTES);
    if (c.origin !== undefined) origin.writeBigUInt64BE(BigInt(c.origin));
    const body = Buffer.concat([Buffer.of(c.origin === undefined ? VERSION : VERSION_WITH_ORIGIN), position, origin, Buffer.from(c.key, 'utf8')]);
    return Buffer.concat([body, this.mac(feed, appId, body)]).toString('base64url');
  }

  /** `0`, or a cursor this service issued for the same listing and application; anything else is an InvalidParameterError. */
  verify(feed: FeedTable, appId: string, text: string, parameter = 'changedAfter'): ChangeCursor {
    if (text === '0') return FEED_START;
    const refuse = () => notACursor(parameter);
    if (text.length > MAX_CURSOR_LENGTH || !BASE64URL.test(text)) throw refuse();
    const bytes = Buffer.from(text, 'base64url');
    // Only the canonical spelling: another one (spare bits set in the last character) is not what was issued.
    if (bytes.toString('base64url') !== text) throw refuse();
    if (bytes[0] !== VERSION && bytes[0] !== VERSION_WITH_ORIGIN) {
      if (UNSIGNED.test(bytes.subarray(0, 20).toString('latin1'))) {
        throw new InvalidParameterError(
          parameter,
          `${parameter} is an unsigned cursor issued before cursors were signed; it is no longer accepted: restart from ${parameter}=0 (docs/change-feed.md)`,
        );
      }
      throw refuse();
    }
    const keyAt = 1 + POSITION_BYTES + (bytes[0] === VERSION_WITH_ORIGIN ? POSITION_BYTES : 0);
    if (bytes.length < keyAt + MAC_BYTES) throw refuse();
    const body = bytes.subarray(0, bytes.length - MAC_BYTES);
    if (!timingSafeEqual(bytes.subarray(body.length), this.mac(feed, appId, body))) throw refuse();
    // Signed, so issued here; checked all the same, so a leaked key cannot make a cursor crash a query.
    const position = body.readBigUInt64BE(1);
    const origin = keyAt > 1 + POSITION_BYTES ? body.readBigUInt64BE(1 + POSITION_BYTES) : undefined;
    let key: string;
    try {
      key = utf8.decode(body.subarray(keyAt));
    } catch {
      throw refuse();
    }
    if (position > MAX_POSITION || (origin !== undefined && origin > MAX_POSITION) || key.includes('\0')) throw refuse();
    return origin === undefined ? { position: position.toString(), key } : { position: position.toString(), key, origin: origin.toString() };
  }

  private mac(feed: FeedTable, appId: string, body: Buffer): Buffer {
    const field = (s: string) => {
      const bytes = Buffer.from(s, 'utf8');
      const length = Buffer.alloc(4);
      length.writeUInt32BE(bytes.length);
      return Buffer.concat([length, bytes]);
    };
    return createHmac('sha256', this.key)
      .update(field('subscription-records change-feed cursor'))
      .update(field(feed))
      .update(field(appId))
      .update(body)
      .digest()
      .subarray(0, MAC_BYTES);
  }
}

export const cursorKeySql = `SELECT key FROM public.change_feed_cursor_key`;

const signers = new WeakMap<DataSource, Promise<CursorSigner>>();

/** The signer for this database's key, read once per data source (the handlers of both listings share it). */
export function cursorSigner(db: DataSource): Promise<CursorSigner> {
  let signer = signers.get(db);
  if (!signer) {
    signer = (async () => {
      const rows = (await db.query(cursorKeySql)) as { key: Buffer }[];
      if (rows.length !== 1) throw new Error('public.change_feed_cursor_key holds no key: the migration ChangeFeedCursorKey1764400000000 makes it');
      return new CursorSigner(rows[0].key);
    })();
    signer.catch(() => signers.delete(db));
    signers.set(db, signer);
  }
  return signer;
}
