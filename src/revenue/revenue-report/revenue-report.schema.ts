const usd = (description: string) => ({ type: 'number', description }) as const;
const count = (description: string) => ({ type: 'integer', description }) as const;

const figures = {
  grossUSD: usd('What the counted transactions charged, in USD (buyer currencies at each charge day’s rate), to the cent'),
  refundsUSD: usd('The part of grossUSD the stores refunded (partial refunds at their share)'),
  proceedsUSD: usd("Estimate: grossUSD less refundsUSD, less each store's commission (STORE_COMMISSION; the reduced rate after a subscriber's first year)"),
  transactions: count('Transactions charged in the period (production, not pending, not family-shared access)'),
  unconverted: count('Of those, transactions whose currency had no exchange rate for their day: not in the USD figures'),
  unpriced: count('Of those, transactions with no amount at all: not in the USD figures'),
} as const;

const figureSchema = { type: 'object', required: Object.keys(figures), properties: figures } as const;

/** JSON Schema of GET /v2/revenue's answer (docs/revenue.md). */
export const revenueReportSchema = {
  type: 'object',
  required: ['startdate', 'enddate', 'totals'],
  properties: {
    startdate: { type: 'string', format: 'date', description: 'First UTC day counted' },
    enddate: { type: 'string', format: 'date', description: 'The UTC day after the last one counted' },
    groupBy: { type: 'string', enum: ['day', 'product', 'platform'] },
    totals: figureSchema,
    groups: {
      type: 'array',
      description: 'With groupBy: one entry per day, productId or platform that has transactions, in key order',
      items: { type: 'object', required: ['key', ...Object.keys(figures)], properties: { key: { type: 'string' }, ...figures } },
    },
  },
} as const;

export type RevenueFigures = { grossUSD: number; refundsUSD: number; proceedsUSD: number; transactions: number; unconverted: number; unpriced: number };
export type RevenueReport = {
  startdate: string;
  enddate: string;
  groupBy?: string;
  totals: RevenueFigures;
  groups?: (RevenueFigures & { key: string })[];
};
