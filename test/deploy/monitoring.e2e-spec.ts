import { readFileSync } from 'node:fs';
import path from 'node:path';
import yaml from 'js-yaml';
import { startTestApp, type TestApp } from '../utils/app.js';
import { createTestDatabase, type TestDatabase } from '../utils/database.js';

const root = path.resolve(import.meta.dirname, '../..');
type Rule = { alert: string; expr: string; for?: string; labels?: { severity?: string }; annotations?: { summary?: string; description?: string } };

/** The metric names an expression reads, histogram series mapped to their family. */
const metricsIn = (expr: string) => [...expr.matchAll(/\bsubscription_records_[a-z0-9_]+/g)].map((m) => m[0].replace(/_(bucket|count|sum)$/, ''));

describe('deploy/: Prometheus alert rules and the Grafana dashboard (e2e: checked against /metrics)', () => {
  let db: TestDatabase;
  let api: TestApp;
  let families: Set<string>;

  beforeAll(async () => {
    db = await createTestDatabase('monitoring');
    api = await startTestApp({ databaseUrl: db.url });
    const text = (await api.get('/metrics')).body as string;
    families = new Set([...text.matchAll(/^# TYPE (\S+) /gm)].map((m) => m[1]));
  });
  afterAll(async () => {
    await api?.close();
    await db?.drop();
  });

  it('alert rules parse as Prometheus rule groups, each complete and reading only exported metrics', () => {
    const file = yaml.load(readFileSync(path.join(root, 'deploy/prometheus/alerts.yml'), 'utf8')) as { groups: { name: string; rules: Rule[] }[] };
    const rules = file.groups.flatMap((g) => g.rules);
    expect(rules.map((r) => r.alert)).toEqual(
      expect.arrayContaining([
        'SubscriptionRecordsConsumerDown',
        'SubscriptionRecordsLagHigh',
        'SubscriptionRecordsDeadLetters',
        'SubscriptionRecordsHttp5xx',
        'SubscriptionRecordsWebhookBacklog',
      ]),
    );
    for (const rule of rules) {
      expect({ alert: rule.alert, severity: rule.labels?.severity, summary: typeof rule.annotations?.summary }).toEqual({
        alert: rule.alert,
        severity: expect.stringMatching(/^(critical|warning)$/),
        summary: 'string',
      });
      if (rule.for !== undefined) expect(rule.for).toMatch(/^\d+[smh]$/);
      const used = metricsIn(rule.expr);
      expect(used.length).toBeGreaterThan(0);
      for (const name of used) expect({ alert: rule.alert, name, exported: families.has(name) }).toEqual({ alert: rule.alert, name, exported: true });
      // balanced parentheses and braces: a typo here would only show when Prometheus loads the file
      for (const [open, close] of [['(', ')'], ['{', '}'], ['[', ']']]) expect(rule.expr.split(open).length).toBe(rule.expr.split(close).length);
    }
  });

  it('the dashboard is Grafana JSON whose panels read only exported metrics', () => {
    const dashboard = JSON.parse(readFileSync(path.join(root, 'deploy/grafana/subscription-records.json'), 'utf8')) as {
      uid: string;
      panels: { title: string; targets: { expr: string }[] }[];
    };
    expect(dashboard.uid).toBe('subscription-records');
    expect(dashboard.panels.length).toBeGreaterThanOrEqual(10);
    for (const panel of dashboard.panels) {
      for (const target of panel.targets) {
        for (const name of metricsIn(target.expr)) expect({ panel: panel.title, name, exported: families.has(name) }).toEqual({ panel: panel.title, name, exported: true });
      }
    }
  });
});
