import { execFile } from 'node:child_process';
import { mkdirSync, rmSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { promisify } from 'node:util';
import openapiTS, { astToString } from 'openapi-typescript';
import ts from 'typescript';
import { startTestApp, type TestApp } from '../utils/app.js';
import { createTestDatabase, type TestDatabase } from '../utils/database.js';
import { linkEvent, project, txEvent } from '../utils/events.js';

// A client generated from /openapi.json with openapi-typescript, used through openapi-fetch as an
// adopter would: it must type-check, and it must read both endpoints of the running service.
const dir = path.resolve(import.meta.dirname, '../.generated-client');

const CLIENT = `
import createClient from 'openapi-fetch';
import type { paths } from './openapi.js';

const client = createClient<paths>({ baseUrl: process.env.BASE_URL });
const headers = { authorization: \`Bearer \${process.env.TOKEN}\` };
const customers = await client.GET('/v2/customers', { params: { query: { limit: 10 } }, headers });
const named = await client.GET('/v2/customers', { params: { query: { applicationUsername: ['alice', 'doe, john'] } }, headers });
const transactions = await client.GET('/v2/transactions', { params: { query: { startdate: '2024-01-01T00:00:00Z', limit: 5 } }, headers });
const refused = await client.GET('/v2/transactions', { params: { query: { limit: 5000 } }, headers });
const names: string[] = customers.data!.rows.map((c) => c.applicationUsername);
const active: (boolean | undefined)[] = customers.data!.rows.map((c) => c.customerInfo.activeSubscriber);
const ids: string[] = transactions.data!.rows.map((t) => t.transactionId);
const total: number = transactions.data!.paging.total;
const code: string | undefined = refused.error?.code;
console.log(JSON.stringify({ names, active, named: named.data!.rows.map((c) => c.applicationUsername), ids, total, status: refused.response.status, code }));
`;

function typeErrors(files: string[]): string[] {
  const program = ts.createProgram(files, {
    strict: true,
    noEmit: true,
    module: ts.ModuleKind.NodeNext,
    moduleResolution: ts.ModuleResolutionKind.NodeNext,
    target: ts.ScriptTarget.ES2022,
    lib: ['lib.es2022.d.ts', 'lib.dom.d.ts'],
    types: ['node'],
    skipLibCheck: true,
  });
  return ts.getPreEmitDiagnostics(program).map((d) => ts.flattenDiagnosticMessageText(d.messageText, '\n'));
}

describe('a client generated from /openapi.json (openapi-typescript + openapi-fetch)', () => {
  let db: TestDatabase;
  let api: TestApp;

  beforeAll(async () => {
    db = await createTestDatabase('generated_client');
    await project(db.dataSource, [
      txEvent({
        time: '2024-02-01T00:00:00Z',
        data: {
          transactionId: 'apple:a1',
          receiptId: 'apple:ra',
          purchaseDate: '2024-02-01T00:00:00Z',
          expirationDate: '2099-01-01T00:00:00Z',
          applicationUsername: 'alice',
        },
      }),
      txEvent({ time: '2024-03-01T00:00:00Z', data: { transactionId: 'apple:j1', receiptId: 'apple:rj', purchaseDate: '2024-03-01T00:00:00Z' } }),
      linkEvent({ time: '2024-03-01T00:00:00Z', receiptId: 'apple:rj', user: 'doe, john' }),
    ]);
    api = await startTestApp({ databaseUrl: db.url });
    rmSync(dir, { recursive: true, force: true });
    mkdirSync(dir, { recursive: true });
    writeFileSync(path.join(dir, 'package.json'), JSON.stringify({ type: 'module' }));
    const document = (await api.get('/openapi.json')).body;
    writeFileSync(path.join(dir, 'openapi.d.ts'), astToString(await openapiTS(document)));
    writeFileSync(path.join(dir, 'client.ts'), CLIENT);
  });
  afterAll(async () => {
    await api?.close();
    await db?.drop();
    rmSync(dir, { recursive: true, force: true });
  });

  it('type-checks, and a mistake against the document does not', () => {
    expect(typeErrors([path.join(dir, 'client.ts')])).toEqual([]);
    writeFileSync(
      path.join(dir, 'wrong.ts'),
      `${CLIENT}\nconst wrong: number = customers.data!.rows[0].receiptIds;\nawait client.GET('/v2/transactions', { params: { query: { limit: 'ten' } } });\n`,
    );
    expect(typeErrors([path.join(dir, 'wrong.ts')]).length).toBeGreaterThanOrEqual(2);
  });

  it('reads both endpoints of the running service, username lists and problems included', async () => {
    const js = ts.transpileModule(CLIENT, { compilerOptions: { module: ts.ModuleKind.ESNext, target: ts.ScriptTarget.ES2022 } }).outputText;
    writeFileSync(path.join(dir, 'client.mjs'), js);
    const { stdout } = await promisify(execFile)(process.execPath, [path.join(dir, 'client.mjs')], {
      env: { ...process.env, BASE_URL: api.baseUrl, TOKEN: api.token('app-1') },
    });
    expect(JSON.parse(stdout)).toEqual({
      names: ['alice', 'doe, john'],
      active: [true, false],
      named: ['alice', 'doe, john'],
      ids: ['apple:a1', 'apple:j1'],
      total: 2,
      status: 400,
      code: 'invalid_parameter',
    });
  });
});
