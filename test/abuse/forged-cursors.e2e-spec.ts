import { jest } from '@jest/globals';
import fc from 'fast-check';
import { startTestApp, type TestApp } from '../utils/app.js';
import { drainFeed, type Listing, type Row } from '../utils/change-feed.js';
import { createTestDatabase, type TestDatabase } from '../utils/database.js';
import { project, txEvent } from '../utils/events.js';
import { expectEventually } from '../utils/expect-eventually.js';

jest.setTimeout(180_000);

// Hostile changedAfter values: every cursor the service did not issue, for this listing and this
// application, is a 400 problem naming changedAfter; never a 5xx, never a page (an empty page would
// tell a client it is caught up while it misses every later change).
const SCALE = Number(process.env.ABUSE_SCALE ?? 1);
const RUNS = Math.max(1, Math.round(100 * SCALE));
const LISTINGS: Listing[] = ['customers', 'transactions'];

const b64 = (bytes: Uint8Array | string) => Buffer.from(bytes).toString('base64url');
/** Every byte percent-encoded: the query string carries exactly these bytes, valid UTF-8 or not. */
const percentBytes = (bytes: Uint8Array) => [...bytes].map((b) => `%${b.toString(16).padStart(2, '0').toUpperCase()}`).join('');
/** The cursor layout as docs/change-feed.md describes it (version 1, 8-byte position, key, 16-byte MAC), with any MAC. */
const signedLayout = (position: bigint, key: Uint8Array, mac: Uint8Array, version = 1) => {
  const p = Buffer.alloc(8);
  p.writeBigUInt64BE(position);
  return b64(Buffer.concat([Buffer.of(version), p, key, mac]));
};

describe('forged change-feed cursors (e2e, real PostgreSQL)', () => {
  let db: TestDatabase;
  let api: TestApp;
  let token: string;
  const genuine: Record<Listing, string[]> = { customers: [], transactions: [] };

  beforeAll(async () => {
    db = await createTestDatabase('forgedcursors');
    api = await startTestApp({ databaseUrl: db.url });
    token = api.token('app-1');
    await project(
      db.dataSource,
      ['alice', 'bob', 'carol', 'dé jà ✓'].map((user, i) =>
        txEvent({
          time: `2024-01-0${i + 1}T00:00:00Z`,
          data: { transactionId: `apple:t${i}`, purchaseDate: `2024-01-0${i + 1}T00:00:00Z`, applicationUsername: user },
        }),
      ),
    );
    // Every cursor a client paging one row at a time is handed, from the start to the end. An empty
    // page means "nothing more yet": a transaction elsewhere on the server can hold one read's
    // high-water mark back for a moment (docs/change-feed.md), even after a read that found every
    // change below it, so page again from the start until a walk saw all four rows.
    for (const listing of LISTINGS) {
      let status = 200;
      genuine[listing] = await expectEventually(
        async () => {
          const cursors: string[] = [];
          for (let cursor = '0'; ;) {
            const res = await api.get(`/v2/${listing}?changedAfter=${cursor}&limit=1`, token);
            status = res.status;
            if (status !== 200) return cursors; // not retried: asserted below
            cursor = res.body.paging.next;
            cursors.push(cursor);
            if (res.body.rows.length === 0) break;
          }
          expect(cursors).toHaveLength(5);
          return cursors;
        },
        30_000,
        50,
      );
      expect(status).toBe(200);
    }
  });
  afterAll(async () => {
    await api?.close();
    await db?.drop();
  });

  /**
   * GET a feed page that must pass `expected`, asked again while it does not: a transaction elsewhere
   * on the server can hold one read's high-water mark back (docs/change-feed.md), and that page comes
   * back short. A status other than 200 fails at once.
   */
  async function readFeed(client: TestApp, path: string, clientToken: string, expected: (body: { rows: Row[]; paging: { next: string } }) => void) {
    let status = 200;
    await expectEventually(
      async () => {
        const res = await client.get(path, clientToken);
        status = res.status;
        if (status === 200) expected(res.body);
      },
      30_000,
      50,
    );
    expect(status).toBe(200);
  }

  /** `value` goes into the query string as is: callers percent-encode what needs it. */
  async function expectRefused(listing: Listing, value: string, o: { app?: string } = {}) {
    const res = await api.get(`/v2/${listing}?changedAfter=${value}`, o.app ? api.token(o.app) : token);
    const seen = { value, status: res.status, contentType: res.headers.get('content-type'), parameter: res.body?.parameter, code: res.body?.code };
    expect(seen).toEqual({
      value,
      status: 400,
      contentType: expect.stringContaining('application/problem+json'),
      parameter: 'changedAfter',
      code: 'invalid_parameter',
    });
    return res;
  }

  it('genuine cursors of both listings are read on, and 0 starts over', async () => {
    for (const listing of LISTINGS) {
      await readFeed(api, `/v2/${listing}?changedAfter=${genuine[listing][1]}`, token, (body) => expect(body.rows).toHaveLength(2));
      await readFeed(api, `/v2/${listing}?changedAfter=0`, token, (body) => expect(body.rows).toHaveLength(4));
    }
  });

  it.each([
    ['NUL in the key (unsigned layout)', b64('5:al\u0000ice')],
    ['invalid UTF-8 in the key (unsigned layout)', b64(Buffer.from([0x35, 0x3a, 0xff, 0xfe, 0x61]))],
    ['far-future position (unsigned layout)', b64('9223372036854775807:')],
    ['far-future position, signed layout with a made-up MAC', signedLayout(2n ** 63n - 1n, Buffer.alloc(0), Buffer.alloc(16))],
    ['NUL in the key, signed layout with a made-up MAC', signedLayout(1n, Buffer.from('a\u0000b'), Buffer.alloc(16, 7))],
    ['position above bigint, signed layout', signedLayout(2n ** 64n - 1n, Buffer.alloc(0), Buffer.alloc(16))],
    ['raw %FF', '%FF'],
    ['raw %00', '%00'],
    ['percent-encoded invalid UTF-8 around base64url', `MDo${percentBytes(Uint8Array.of(0xc3, 0x28))}`],
    ['empty', ''],
    ['negative number', '-1'],
    ['number with exponent', '1e3'],
    ['JSON object', encodeURIComponent('{"position":"99999999","key":""}')],
    ['base64 with padding', 'MDo='],
    ['standard base64 alphabet', 'ab+/'],
    ['one character', 'A'],
    ['4097 characters', 'A'.repeat(4097)],
    ['15000 characters', 'A'.repeat(15000)],
  ])('%s', async (_name, value) => {
    for (const listing of LISTINGS) await expectRefused(listing, value);
  });

  it('changedAfter given twice or as a list is refused naming changedAfter', async () => {
    for (const listing of LISTINGS) {
      for (const query of [`changedAfter=0&changedAfter=${genuine[listing][0]}`, `changedAfter=${genuine[listing][0]}&changedAfter=${genuine[listing][0]}`]) {
        const res = await api.get(`/v2/${listing}?${query}`, token);
        expect({ status: res.status, parameter: res.body.parameter }).toEqual({ status: 400, parameter: 'changedAfter' });
      }
    }
  });

  it('an unsigned cursor of the kind issued before signing is refused with a message telling the client to restart from 0', async () => {
    const [{ p }] = (await db.dataSource.query(`SELECT min(change_position)::text AS p FROM read_model.transactions WHERE app_id = 'app-1'`)) as {
      p: string;
    }[];
    const res = await expectRefused('transactions', b64(`${p}:apple:t0`));
    expect(res.body.detail).toMatch(/unsigned cursor.*restart from changedAfter=0/);
  });

  it('a cursor is good for the listing and the application it was issued for only', async () => {
    await expectRefused('transactions', genuine.customers[1]);
    await expectRefused('customers', genuine.transactions[1]);
    await expectRefused('transactions', genuine.transactions[1], { app: 'app-2' });
  });

  it('property: truncated, extended or altered genuine cursors are refused', async () => {
    const cursor = fc.record({ listing: fc.constantFrom(...LISTINGS), i: fc.nat({ max: 4 }) });
    const alphabet = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_';
    const altered = fc
      .tuple(
        cursor,
        fc.oneof(
          fc.record({ kind: fc.constant('truncate' as const), keep: fc.nat() }),
          fc.record({ kind: fc.constant('append' as const), more: fc.string({ unit: fc.constantFrom(...alphabet), minLength: 1, maxLength: 40 }) }),
          fc.record({ kind: fc.constant('replace' as const), at: fc.nat(), by: fc.constantFrom(...alphabet) }),
          fc.record({ kind: fc.constant('flipByte' as const), at: fc.nat(), bit: fc.integer({ min: 0, max: 7 }) }),
        ),
      )
      .map(([{ listing, i }, change]) => {
        const text = genuine[listing][i];
        const bytes = Buffer.from(text, 'base64url');
        switch (change.kind) {
          case 'truncate':
            return { listing, value: text.slice(0, change.keep % text.length) || 'x' };
          case 'append':
            return { listing, value: text + change.more };
          case 'replace': {
            const at = change.at % text.length;
            return { listing, value: text.slice(0, at) + change.by + text.slice(at + 1) };
          }
          case 'flipByte': {
            bytes[change.at % bytes.length] ^= 1 << change.bit;
            return { listing, value: b64(bytes) };
          }
        }
      })
      .filter(({ listing, value }) => !genuine[listing].includes(value));
    await fc.assert(
      fc.asyncProperty(altered, async ({ listing, value }) => {
        await expectRefused(listing, value);
      }),
      { numRuns: RUNS },
    );
  });

  it('property: made-up cursors in either layout, any key bytes, any position, are refused', async () => {
    const forged = fc.oneof(
      // the signed layout with a guessed MAC: far-future positions, NUL, invalid UTF-8
      fc
        .tuple(
          fc.bigInt({ min: 0n, max: 2n ** 64n - 1n }),
          fc.uint8Array({ maxLength: 64 }),
          fc.uint8Array({ minLength: 0, maxLength: 32 }),
          fc.integer({ min: 0, max: 255 }),
        )
        .map(([position, key, mac, version]) => signedLayout(position, key, mac, version)),
      // the unsigned layout of the past
      fc
        .tuple(fc.bigInt({ min: 0n, max: 10n ** 19n - 1n }), fc.uint8Array({ maxLength: 64 }))
        .map(([position, key]) => b64(Buffer.concat([Buffer.from(`${position}:`), key]))),
      // any bytes at all, sent raw (percent-encoded): invalid UTF-8, NUL, separators
      fc
        .uint8Array({ minLength: 1, maxLength: 200 })
        .filter((b) => Buffer.from(b).toString('latin1') !== '0')
        .map(percentBytes),
      // any text, URL-encoded
      fc
        .string({ unit: 'binary', minLength: 1, maxLength: 200 })
        .filter((s) => s !== '0')
        .map(encodeURIComponent),
      // long runs of the base64url alphabet
      fc.integer({ min: 4097, max: 14_000 }).map((n) => 'A'.repeat(n)),
    );
    await fc.assert(
      fc.asyncProperty(fc.constantFrom(...LISTINGS), forged, async (listing, value) => {
        await expectRefused(listing, value);
      }),
      { numRuns: RUNS * 2 },
    );
  });

  it('cursors stay good on another instance and after a restart (same database), and the service keeps serving after the abuse', async () => {
    const other = await startTestApp({ databaseUrl: db.url });
    try {
      for (const listing of LISTINGS) {
        await readFeed(other, `/v2/${listing}?changedAfter=${genuine[listing][2]}`, other.token('app-1'), (body) => {
          expect(body.rows).toHaveLength(1);
          expect(body.paging.next).toBe(genuine[listing][3]);
        });
      }
    } finally {
      await other.close();
    }
    await api.close();
    api = await startTestApp({ databaseUrl: db.url });
    token = api.token('app-1');
    await project(db.dataSource, [
      txEvent({
        time: '2024-02-01T00:00:00Z',
        data: { transactionId: 'apple:after-restart', purchaseDate: '2024-02-01T00:00:00Z', applicationUsername: 'dave' },
      }),
    ]);
    // Drained again from the start while a held-back high-water mark (readFeed) ends it short.
    await expectEventually(
      async () => {
        const seen = { customers: new Map<string, Row>(), transactions: new Map<string, Row>() };
        for (const listing of LISTINGS) await drainFeed(api, token, listing, genuine[listing][4], seen[listing]);
        expect([...seen.transactions.keys()]).toEqual(['apple:after-restart']);
        expect([...seen.customers.keys()]).toEqual(['dave']);
      },
      30_000,
      50,
    );
  });
});
