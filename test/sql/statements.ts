import { RevenueReportQuery } from '../../src/revenue/revenue-report/revenue-report.query.js';
import { readdirSync } from 'node:fs';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import { CUSTOMER_COLUMNS } from '../../src/customers/list-customers/list-customers.sql.js';
import type { CustomerFilters } from '../../src/customers/list-customers/customer-filters.js';
import { ListCustomersQuery } from '../../src/customers/list-customers/list-customers.query.js';
import { ListTransactionsQuery } from '../../src/transactions/list-transactions/list-transactions.query.js';
import { TRANSACTION_COLUMNS } from '../../src/transactions/list-transactions/list-transactions.sql.js';
import type { TransactionFilters } from '../../src/transactions/list-transactions/transaction-filters.js';
import { root, type Statement } from './snapshot-files.js';

// Every statement shape a query handler, the projection, the rebuild or the webhook sender builds,
// from fixed inputs. Every *.sql.ts module under src/ (and the few modules named in EXTRA_MODULES)
// is loaded and its exports walked: a statement (a string, or an object of them) is rendered as it
// is, a builder is rendered with its cases from MODULES, and anything else must be named there as
// not a statement. A new module or export is thus rendered, or the test says what to add here.

/** The instant every status filter is read at. */
export const NOW = new Date('2026-10-15T00:00:00.000Z');
const LIVE = 'read_model';
/** The schema a rebuild builds its generation in (GENERATION_SCHEMA.rebuild in rebuilder.ts). */
const GENERATION = 'read_model_next';
const APP = 'app';

/** A builder's cases: a label (after the export name in the header) and its arguments. */
type Cases = [label: string, args: unknown[]][];

export type ModuleInputs = {
  /** Exports that are no statement of their own (fragments inside statements, constants, helpers). */
  notStatements?: string[];
  /** Per builder, by its path (`sql.dayCounts`, `customerPageSql`): the inputs to render it with. */
  cases?: Record<string, Cases>;
};

/** `src/a/b.sql.ts` and `src/a/b.ts` are snapshotted in `src/a/b.queries.sql`. */
export const snapshotFileOf = (source: string) => source.replace(/(\.sql)?\.ts$/, '.queries.sql');

const isBuilt = (v: unknown): v is { sql: string; params?: unknown[]; name?: string } =>
  typeof v === 'object' && v !== null && typeof (v as { sql?: unknown }).sql === 'string';

type Lookup = (name: string) => Cases | undefined;

function walk(name: string, value: unknown, casesOf: Lookup, label?: string): Statement[] {
  const named = label === undefined ? name : `${name} (${label})`;
  if (typeof value === 'string') return [{ name: named, sql: value }];
  if (isBuilt(value)) return [{ name: named, sql: value.sql, prepared: value.name, params: value.params }];
  if (typeof value === 'function') {
    const cases = casesOf(name);
    if (!cases) throw new Error(`${name} builds SQL from arguments: give it cases in MODULES of test/sql/statements.ts (or list it as not a statement)`);
    return cases.flatMap(([l, args]) => {
      const labels = [label, l].filter((x) => x !== undefined && x !== '').join(', ');
      return walk(name, (value as (...a: unknown[]) => unknown)(...args), casesOf, labels === '' ? undefined : labels);
    });
  }
  if (typeof value === 'object' && value !== null && !Array.isArray(value)) {
    return Object.entries(value).flatMap(([key, v]) => walk(`${name}.${key}`, v, casesOf, label));
  }
  throw new Error(
    `${name} is no statement (${Array.isArray(value) ? 'an array' : typeof value}): list it as not a statement in MODULES of test/sql/statements.ts`,
  );
}

/** The statements of the module at `source` (relative to the root), rendered with its inputs from MODULES. */
export async function statementsOf(source: string): Promise<Statement[]> {
  const exports = (await import(pathToFileURL(path.join(root, source)).href)) as Record<string, unknown>;
  const inputs = MODULES[source] ?? {};
  const skip = new Set(inputs.notStatements ?? []);
  const cases = inputs.cases ?? {};
  try {
    return Object.keys(exports)
      .filter((name) => !skip.has(name))
      .flatMap((name) => walk(name, exports[name], (n) => cases[n]));
  } catch (error) {
    throw new Error(`${source}: ${(error as Error).message}`, { cause: error });
  }
}

const customers = (filters: CustomerFilters, usernames?: string[]) => new ListCustomersQuery(APP, 250, 100, usernames, filters);
const AFTER = new Date('2026-10-01T12:00:00.000Z');
const BEFORE = new Date('2026-11-01T00:00:00.000Z');
const PRODUCT = 'apple:monthly';

/** Each filter alone, status sets, and combinations (the statement's shape depends on which filters are given). */
const CUSTOMER_FILTERS: [string, CustomerFilters][] = [
  ['status=active', { statuses: ['active'] }],
  ['status=none', { statuses: ['none'] }],
  ['status=expired,none', { statuses: ['expired', 'none'] }],
  ['renewalIntent', { renewalIntent: 'Renew' }],
  ['productId', { productId: PRODUCT }],
  ['expiresAfter', { expiresAfter: AFTER }],
  ['expiresBefore', { expiresBefore: BEFORE }],
  ['renewalIntent+productId', { renewalIntent: 'Lapse', productId: PRODUCT }],
  ['expiresAfter+expiresBefore', { expiresAfter: AFTER, expiresBefore: BEFORE }],
  [
    'status=active,grace_period+renewalIntent+productId+expiresAfter+expiresBefore',
    { statuses: ['active', 'grace_period'], renewalIntent: 'Renew', productId: PRODUCT, expiresAfter: AFTER, expiresBefore: BEFORE },
  ],
];
const PAGE_DAYS = ['2026-10-12', '2026-10-13', '2026-10-14'];
const filteredCases = (extra: unknown[]): Cases => CUSTOMER_FILTERS.map(([label, f]) => [label, [customers(f), NOW, ...extra]]);

const transactions = (filters: TransactionFilters, start?: Date, end?: Date) => new ListTransactionsQuery(APP, 250, 100, start, end, filters);
const DAY_START = new Date('2026-10-01T00:00:00.000Z');
const MID_DAY = new Date('2026-10-01T06:30:00.000Z');
const DAY_END = new Date('2026-10-15T00:00:00.000Z');
const MID_END = new Date('2026-10-14T18:00:00.000Z');
const ROW_FILTERS: TransactionFilters = { productId: PRODUCT, platform: 'apple', sandbox: false };

const FEED_TABLES = ['customers', 'transactions'];
const TABLES = FEED_TABLES.map((t): [string, unknown[]] => [t, [t]]);

/** Per module (relative to the root), how to render what it exports. */
export const MODULES: Record<string, ModuleInputs> = {
  'src/customers/list-customers/list-customers.sql.ts': {
    notStatements: ['CUSTOMER_COLUMNS'],
    cases: {
      customerPageSql: [['', [customers({}), DAY_START, 7]]],
      customersByNameSql: [
        ['no filter', [customers({}, ['ann', 'bob']), NOW]],
        ...CUSTOMER_FILTERS.map(([label, f]): [string, unknown[]] => [label, [customers(f, ['ann', 'bob']), NOW]]),
      ],
      filteredPageStartSql: filteredCases([]),
      filteredPageSql: filteredCases([PAGE_DAYS, 7]),
      rowsPageSql: filteredCases([PAGE_DAYS, 7]),
    },
  },
  'src/transactions/list-transactions/list-transactions.sql.ts': {
    notStatements: ['TRANSACTION_COLUMNS', 'STORED_TRANSACTION_COLUMNS'],
    cases: {
      pageStartSql: [
        ['no filter', [transactions({})]],
        ['whole days', [transactions({}, DAY_START, DAY_END)]],
        ['start cut', [transactions({}, MID_DAY)]],
        ['end cut', [transactions({}, undefined, MID_END)]],
        ['start and end cut', [transactions({}, MID_DAY, MID_END)]],
        ['productId', [transactions({ productId: PRODUCT })]],
        ['platform', [transactions({ platform: 'google' })]],
        ['sandbox=true', [transactions({ sandbox: true })]],
        ['sandbox=false', [transactions({ sandbox: false })]],
        ['productId+platform+sandbox, start and end cut', [transactions(ROW_FILTERS, MID_DAY, MID_END)]],
      ],
      transactionPageSql: [
        ['no filter', [transactions({}), DAY_START, 7]],
        ['endDate', [transactions({}, MID_DAY, MID_END), DAY_START, 7]],
        ['productId+platform+sandbox', [transactions(ROW_FILTERS), DAY_START, 7]],
        ['productId+platform+sandbox, endDate', [transactions(ROW_FILTERS, MID_DAY, MID_END), DAY_START, 7]],
      ],
      filteredTransactionsSql: [
        ['transactionId without a platform', [transactions({ transactionId: '2000000123456789' })]],
        ['purchaseId', [transactions({ purchaseId: 'google:GPA.3301-2345-6789-01234' })]],
        [
          'transactionId+productId+platform+sandbox, startDate and endDate',
          [transactions({ transactionId: 'apple:2000000123456789', ...ROW_FILTERS }, MID_DAY, MID_END)],
        ],
      ],
    },
  },
  'src/change-feed/read-changes.ts': {
    notStatements: ['onPool', 'readChanges'],
    cases: {
      // with the columns each feed shows (list-customer-changes and list-transaction-changes handlers)
      changesSql: [
        ['customers', ['customers', CUSTOMER_COLUMNS]],
        ['transactions', ['transactions', TRANSACTION_COLUMNS]],
      ],
    },
  },
  'src/change-feed/change-positions.sql.ts': {
    // fragments of the statements below and of changesSql
    notStatements: ['VISIBLE_COLUMNS', 'FEED_TABLES', 'KEY_COLUMN', 'shownRow', 'sameShown', 'CURRENT_XID', 'OLDEST_RUNNING', 'HIGH_WATER'],
    cases: {
      stampFunctionSql: TABLES,
      installStampTriggerSql: FEED_TABLES.flatMap((t): Cases => [
        [`${LIVE}, ${t}, live`, [LIVE, t, 'live']],
        [`${GENERATION}, ${t}, generation`, [GENERATION, t, 'generation']],
        [`${GENERATION}, ${t}, scratch`, [GENERATION, t, 'scratch']],
      ]),
      dropStampTriggerSql: FEED_TABLES.map((t): [string, unknown[]] => [t, [GENERATION, t]]),
      stampSwitchedSql: FEED_TABLES.map((t): [string, unknown[]] => [t, [GENERATION, t]]),
    },
  },
  'src/change-feed/feed-deletions.sql.ts': {
    notStatements: ['recordFeedDeletions'],
    cases: {
      'feedDeletionsSql.record': TABLES,
      'feedDeletionsSql.announceDropped': FEED_TABLES.map((t): [string, unknown[]] => [t, [GENERATION, t]]),
    },
  },
  'src/projection/apply-batch.sql.ts': {
    notStatements: ['RECEIPT_LOCK_BUCKETS', 'APP_LOCK_BUCKETS'],
    cases: {
      sql: [['', [LIVE]]],
      'sql.dayCounts': [
        ['transaction_day_counts', ['transaction_day_counts']],
        ['customer_day_counts', ['customer_day_counts']],
      ],
    },
  },
  'src/revenue/revenue-report/revenue-report.sql.ts': {
    notStatements: ['reportParts'],
    cases: {
      revenueReportSql: [
        ['totals', [new RevenueReportQuery(APP, '2026-10-01', '2026-11-01')]],
        ['per day', [new RevenueReportQuery(APP, '2026-10-01', '2026-11-01', 'day')]],
        ['per product', [new RevenueReportQuery(APP, '2026-10-01', '2026-11-01', 'product')]],
        ['per platform', [new RevenueReportQuery(APP, '2026-10-01', '2026-11-01', 'platform')]],
        ['whole months and edge days', [new RevenueReportQuery(APP, '2026-09-15', '2026-11-10', 'product')]],
      ],
    },
  },
  'src/revenue/revenue-months.sql.ts': {
    cases: { revenueMonthsSql: [['', [LIVE]]] },
  },
  'src/revenue/revenue-cell.sql.ts': {
    notStatements: ['chargedAt', 'afterFirstYear', 'refundShare', 'amountUsd', 'earns', 'revenueCellColumns', 'dayRates', 'converted'],
    cases: {},
  },
  'src/projection/customer-summary.sql.ts': {
    notStatements: ['iso'],
    cases: { customerSummarySql: [['', [LIVE]]] },
  },
  'src/projection/bulk/bulk-load.sql.ts': {
    notStatements: ['STAGED_TABLE', 'STAGED_COLUMNS'],
    cases: {
      bulkSql: [['', [GENERATION]]],
      'bulkSql.foldTransactions': [
        ['rebuild: keeps live positions', [true]],
        ['verify', [false]],
      ],
    },
  },
  'src/event-log/event-log.sql.ts': {
    notStatements: ['NOTIFY_CHANNEL'],
    cases: {
      'eventLogSql.append': [
        ['1 message', [1]],
        ['3 messages', [3]],
      ],
    },
  },
  'src/operations/rebuild/rebuild.sql.ts': {
    cases: {
      'rebuildSql.offsets': [['', [GENERATION]]],
      'rebuildSql.announceDropped': FEED_TABLES.map((t): [string, unknown[]] => [t, [GENERATION, t]]),
    },
  },
};

/** Modules that build statements without being named *.sql.ts. */
export const EXTRA_MODULES = ['src/change-feed/read-changes.ts'];

/** The files under src/ whose name ends with `suffix`, relative to the root. */
const underSrc = (suffix: string) =>
  (readdirSync(path.join(root, 'src'), { recursive: true }) as string[])
    .filter((f) => f.endsWith(suffix))
    .map((f) => path.posix.join('src', f.split(path.sep).join('/')))
    .sort();

/** Every module snapshotted: each `*.sql.ts` under src/ and EXTRA_MODULES. */
export const snapshotModules = () => [...underSrc('.sql.ts'), ...EXTRA_MODULES];

/** Every committed statements snapshot under src/. */
export const committedSnapshots = () => underSrc('.queries.sql');
