import { createConfig, lintFromString } from '@redocly/openapi-core';
import { startTestApp, type TestApp } from '../utils/app.js';
import { createTestDatabase, type TestDatabase } from '../utils/database.js';

describe('/openapi.json passes redocly lint (recommended rules)', () => {
  let db: TestDatabase;
  let api: TestApp;

  beforeAll(async () => {
    db = await createTestDatabase('openapi_lint');
    api = await startTestApp({ databaseUrl: db.url });
  });
  afterAll(async () => {
    await api?.close();
    await db?.drop();
  });

  it('has no problems, warnings included', async () => {
    const source = JSON.stringify((await api.get('/openapi.json')).body);
    const config = await createConfig({ extends: ['recommended'] });
    const problems = await lintFromString({ source, absoluteRef: 'openapi.json', config });
    expect(problems.map((p) => `${p.severity} ${p.ruleId}: ${p.message} at ${p.location.map((l) => l.pointer).join(', ')}`)).toEqual([]);
  });
});
