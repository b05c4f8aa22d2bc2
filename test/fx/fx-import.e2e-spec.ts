import { jest } from '@jest/globals';
import { zipSync } from 'fflate';
import { readFileSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import path from 'node:path';
import { FxRatesFetcher } from '../../src/fx/fx-rates-fetcher.js';
import { startTestApp, type TestApp } from '../utils/app.js';
import { createTestDatabase, type TestDatabase } from '../utils/database.js';
import { expectEventually } from '../utils/expect-eventually.js';
import { runCli, writeTempFile } from '../utils/processes.js';

jest.setTimeout(120_000);

// Hand-written in the ECB's own layouts: three weeks of January 2024 for six currencies (ISK N/A on
// the 10th and 11th), a daily file for the 22nd, another for the 23rd (ISK N/A), and the history with
// a new day on top, a changed rate, a day out of order, a zero and a negative rate.
const FIXTURES = path.join(import.meta.dirname, '../fixtures/fx');
const HISTORY = path.join(FIXTURES, 'eurofxref-hist.csv');
const DAILY = path.join(FIXTURES, 'eurofxref.csv');
const BAD = path.join(FIXTURES, 'eurofxref-hist-bad.csv');
const DAILY_23 = readFileSync(path.join(FIXTURES, 'eurofxref-2024-01-23.csv'));

type Rate = { currency: string; day: string; per_eur: string };

describe('exchange rates (e2e: `fx import` and the scheduled fetch, real PostgreSQL)', () => {
  let db: TestDatabase;
  const rates = async (): Promise<Rate[]> =>
    db.dataSource.query(`SELECT currency, to_char(day, 'YYYY-MM-DD') AS day, per_eur::text FROM public.fx_rates ORDER BY day, currency`);
  const fx = (file: string) => runCli(['fx', 'import', file], { DATABASE_URL: db.url });

  beforeAll(async () => {
    db = await createTestDatabase('fx');
  });
  afterAll(async () => {
    await db?.drop();
  });

  describe('fx import', () => {
    it('loads the history file and then the daily one, each rate as the ECB wrote it, N/A left out', async () => {
      const history = await fx(HISTORY);
      expect(history).toEqual({
        code: 0,
        stdout: `${HISTORY}: 14 day(s) from 2024-01-02 to 2024-01-19, 6 currencies (USD JPY GBP CHF SEK ISK): 82 rates, 82 inserted, 0 changed, 0 unchanged\n`,
        stderr: '',
      });
      const daily = await fx(DAILY);
      expect(daily.stdout).toBe(
        `${DAILY}: 1 day(s) from 2024-01-22 to 2024-01-22, 6 currencies (USD JPY GBP CHF SEK ISK): 6 rates, 6 inserted, 0 changed, 0 unchanged\n`,
      );
      expect(daily.code).toBe(0);

      const stored = await rates();
      expect(stored).toHaveLength(88);
      expect(stored.filter((r) => r.day === '2024-01-19')).toEqual([
        { currency: 'CHF', day: '2024-01-19', per_eur: '0.9435' },
        { currency: 'GBP', day: '2024-01-19', per_eur: '0.85683' },
        { currency: 'ISK', day: '2024-01-19', per_eur: '150.90' },
        { currency: 'JPY', day: '2024-01-19', per_eur: '161.72' },
        { currency: 'SEK', day: '2024-01-19', per_eur: '11.4105' },
        { currency: 'USD', day: '2024-01-19', per_eur: '1.0890' },
      ]);
      expect(stored.filter((r) => r.currency === 'ISK' && r.day >= '2024-01-10' && r.day <= '2024-01-11')).toEqual([]);
      expect(stored.filter((r) => r.day === '2024-01-22').map((r) => `${r.currency} ${r.per_eur}`)).toEqual([
        'CHF 0.9438',
        'GBP 0.85615',
        'ISK 150.90',
        'JPY 160.86',
        'SEK 11.3830',
        'USD 1.0891',
      ]);

      // What the read side makes of them (public.usd_rate): a Sunday takes Friday's rates; a day the
      // source did not quote a currency gives no rate for it.
      const [usd] = await db.dataSource.query(
        `SELECT round(public.usd_rate('JPY', '2024-01-21'), 10)::text AS jpy, round(public.usd_rate('GBP', '2024-01-21'), 10)::text AS gbp,
                public.usd_rate('ISK', '2024-01-11') AS isk_unquoted, round(public.usd_rate('EUR', '2024-01-21'), 4)::text AS eur`,
      );
      expect(usd).toEqual({ jpy: '0.0067338610', gbp: '1.2709639018', isk_unquoted: null, eur: '1.0890' });
    });

    it('loading the same files again changes nothing', async () => {
      const before = await rates();
      expect((await fx(HISTORY)).stdout).toMatch(/: 82 rates, 0 inserted, 0 changed, 82 unchanged\n$/);
      expect((await fx(DAILY)).stdout).toMatch(/: 6 rates, 0 inserted, 0 changed, 6 unchanged\n$/);
      expect(await rates()).toEqual(before);
    });

    it('a file with bad lines names each with its reason, exits 1 and changes nothing', async () => {
      const before = await rates();
      const r = await fx(BAD);
      expect(r).toEqual({
        code: 1,
        stdout: '',
        stderr: [
          'line 6: date out of order: 2024-01-18 after 2024-01-17 (dates must run newest first with no day twice)',
          'line 10: JPY 0.00 is a negative or zero rate',
          'line 13: CHF -0.9306 is a negative or zero rate',
          `error: fx import: ${BAD}: 3 bad line(s); nothing was loaded`,
          '',
        ].join('\n'),
      });
      // Its good lines (a new day, a changed USD rate on the 19th) were not written either.
      expect(await rates()).toEqual(before);
    });

    it('a corrected rate replaces the stored one and is counted as changed', async () => {
      const corrected = writeTempFile('eurofxref.csv', 'Date, USD, JPY, \n22 January 2024, 1.0893, 160.86, \n');
      const r = await fx(corrected);
      expect(r.stdout).toMatch(/: 2 rates, 0 inserted, 1 changed, 1 unchanged\n$/);
      const [usd] = await db.dataSource.query(`SELECT per_eur::text FROM public.fx_rates WHERE currency = 'USD' AND day = '2024-01-22'`);
      expect(usd.per_eur).toBe('1.0893');
    });

    it('refuses what is no rates file, and a wrong command line, before opening the database', async () => {
      const env = { DATABASE_URL: 'postgres://127.0.0.1:1/none' };
      expect(await runCli(['fx', 'import', FIXTURES], env)).toMatchObject({
        code: 2,
        stderr: expect.stringMatching(/^error: fx import: .*: it is a directory/),
      });
      expect(await runCli(['fx', 'import'], env)).toMatchObject({ code: 2, stderr: expect.stringMatching(/missing required argument 'file'/) });
      expect(await runCli(['fx'], env)).toMatchObject({ code: 2, stderr: 'error: fx needs a subcommand: import\n' });
      const notRates = writeTempFile('rates.csv', 'Datum;USD\n');
      const notUtf8 = await runCli(['fx', 'import', notRates], env);
      expect(notUtf8.code).toBe(1);
      expect(notUtf8.stderr).toMatch(/^line 1: unknown format: the header must be "Date"/);
    });
  });

  describe('FX_RATES_URL', () => {
    let server: Server;
    let base: string;
    const apps: TestApp[] = [];
    const served: Record<string, { status: number; body?: Uint8Array; location?: string; chunked?: boolean }> = {};
    const requests: string[] = [];

    beforeAll(async () => {
      server = createServer((req, res) => {
        requests.push(req.url ?? '');
        const answer = served[req.url ?? ''] ?? { status: 404 };
        const headers: Record<string, string> = answer.location ? { location: answer.location } : {};
        if (answer.body && !answer.chunked) headers['content-length'] = String(answer.body.length);
        res.writeHead(answer.status, headers);
        res.end(answer.body ? Buffer.from(answer.body) : undefined);
      });
      await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
      base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
      served['/eurofxref.zip'] = { status: 200, body: zipSync({ 'eurofxref.csv': DAILY_23 }) };
      served['/moved.zip'] = { status: 302, location: '/eurofxref.zip' };
      served['/elsewhere.zip'] = { status: 302, location: `${base.replace('127.0.0.1', 'localhost')}/eurofxref.zip` };
      served['/bad.csv'] = { status: 200, body: readFileSync(BAD) };
      served['/huge.csv'] = { status: 200, body: new Uint8Array(17 * 1024 * 1024) };
      // No Content-Length: refused while reading, once past the cap.
      served['/huge-chunked.csv'] = { status: 200, body: new Uint8Array(17 * 1024 * 1024), chunked: true };
    });
    afterAll(async () => {
      for (const app of apps) await app.close();
      await new Promise((resolve) => server?.close(resolve));
    });

    const start = async (url: string) => {
      const app = await startTestApp({ databaseUrl: db.url, env: { FX_RATES_URL: url, FX_RATES_INTERVAL: '7d' } });
      apps.push(app);
      return app.app.get(FxRatesFetcher);
    };

    it("fetches the ECB's daily zip from a loopback server when the service starts and stores its rates", async () => {
      await start(`${base}/eurofxref.zip`);
      await expectEventually(async () => {
        const day = (await rates()).filter((r) => r.day === '2024-01-23').map((r) => `${r.currency} ${r.per_eur}`);
        expect(day).toEqual(['CHF 0.9432', 'GBP 0.85673', 'JPY 160.99', 'SEK 11.3845', 'USD 1.0872']);
      });
    });

    it('follows a redirect within the origin, and the same file fetched again changes nothing', async () => {
      const fetcher = await start(`${base}/moved.zip`);
      // The first fetch runs at start-up; a call while it holds the lock answers undefined.
      await expectEventually(async () => expect(await fetcher.fetchOnce()).toEqual({ inserted: 0, changed: 0, unchanged: 5 }));
    });

    it('refuses a redirect to another origin, a bad file and an oversized answer, keeping what is loaded', async () => {
      const before = await rates();
      const cases: [string, RegExp][] = [
        ['/elsewhere.zip', /redirected to http:\/\/localhost:\d+, another origin than FX_RATES_URL's: not followed/],
        ['/bad.csv', /nothing of it loaded: line 6: date out of order: .*; line 10: JPY 0\.00 is a negative or zero rate; line 13: CHF -0\.9306/],
        ['/huge.csv', /the answer is 17825792 bytes \(at most 16777216\)/],
        ['/huge-chunked.csv', /the answer passed 16777216 bytes: not read further/],
        ['/missing.zip', /answered 404 Not Found/],
      ];
      for (const [file, reason] of cases) {
        const fetcher = await start(`${base}${file}`);
        await expectEventually(async () => {
          await expect(fetcher.fetchOnce()).rejects.toThrow(reason);
        });
      }
      expect(requests.filter((r) => r === '/eurofxref.zip').length).toBeGreaterThan(0);
      expect(await rates()).toEqual(before);
    });

    it('is off unless FX_RATES_URL is set; FX_RATES_URL is https unless loopback, and its interval is a duration', async () => {
      const fetched = requests.length;
      const app = await startTestApp({ databaseUrl: db.url });
      apps.push(app);
      expect(await app.app.get(FxRatesFetcher).fetchOnce()).toBeUndefined();
      expect(requests.length).toBe(fetched);
      await expect(startTestApp({ databaseUrl: db.url, env: { FX_RATES_URL: 'http://rates.example.com/eurofxref.zip' } })).rejects.toThrow(
        /FX_RATES_URL must use https unless it is a loopback address/,
      );
      await expect(startTestApp({ databaseUrl: db.url, env: { FX_RATES_URL: `${base}/eurofxref.zip`, FX_RATES_INTERVAL: '6' } })).rejects.toThrow(
        /FX_RATES_INTERVAL must be a duration such as 6h/,
      );
      await expect(startTestApp({ databaseUrl: db.url, env: { FX_RATES_INTERVAL: '6h' } })).rejects.toThrow(/FX_RATES_INTERVAL needs FX_RATES_URL/);
    });
  });
});
