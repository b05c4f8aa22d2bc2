import type { INestApplication } from '@nestjs/common';
import { DocumentBuilder, SwaggerModule, type OpenAPIObject } from '@nestjs/swagger';
import { customerSummarySchema } from '../customers/customer.schema.js';
import { transactionSchema } from '../transactions/transaction.schema.js';
import { revenueReportSchema } from '../revenue/revenue-report/revenue-report.schema.js';
import { entitlementSchema } from '../entitlements/entitlement.schema.js';
import { webhookPayloads } from '../webhooks/webhook-payloads.schema.js';
import { problemSchema } from './api-problem-responses.js';
import { PACKAGE_VERSION } from './package-version.js';
import { pagingSchema } from './paging.js';

const ref = (name: string) => ({ $ref: `#/components/schemas/${name}` });
const page = (row: string, example: object) => ({
  type: 'object',
  required: ['rows', 'paging'],
  properties: {
    rows: { type: 'array', items: ref(row) },
    paging: ref('Paging'),
  },
  examples: [example],
});

/**
 * Named schemas a generated client gets types for. The routes' own JSON schemas (which also drive
 * fastify's serialisation) stay inline there; the document points at these.
 */
export const COMPONENT_SCHEMAS = {
  CustomerSummary: customerSummarySchema,
  Transaction: transactionSchema,
  Paging: pagingSchema,
  Problem: problemSchema,
  RevenueReport: revenueReportSchema,
  Entitlement: entitlementSchema,
  // examples: answers to the example events (README, "Try it")
  CustomerPage: page('CustomerSummary', {
    rows: [
      {
        applicationUsername: 'alice',
        customerInfo: {
          expirationDate: '2027-01-15T10:00:00.000Z',
          lastPurchaseDate: '2026-01-15T10:00:00.000Z',
          renewalIntent: 'Renew',
          activeSubscriber: true,
        },
        receiptIds: ['apple:r-alice'],
      },
      { applicationUsername: 'erin', customerInfo: {}, receiptIds: [] },
    ],
    paging: { skip: 0, limit: 2, total: 9 },
  }),
  TransactionPage: page('Transaction', {
    rows: [
      {
        transactionId: 'google:GPA.1111-2',
        purchaseId: 'google:GPA.1111',
        productId: 'google:pro_monthly',
        platform: 'google',
        receiptId: 'google:r-bob',
        purchaseDate: '2026-08-01T09:00:00.000Z',
        lastRenewalDate: '2026-09-08T09:00:00.000Z',
        expirationDate: '2026-10-08T09:00:00.000Z',
        renewalIntent: 'Lapse',
        renewalIntentChangeDate: '2026-09-20T17:29:58.000Z',
        amountUSD: 5.49,
        priceUSD: 5.49,
        amountMicros: 4990000,
        priceMicros: 4990000,
        currency: 'EUR',
      },
    ],
    paging: { skip: 0, limit: 100, total: 1 },
  }),
} as const;
export const schemaRef = ref;

/** The OpenAPI 3.1 document served at /openapi.json. */
export function buildOpenApiDocument(app: INestApplication): OpenAPIObject {
  const document = SwaggerModule.createDocument(
    app,
    new DocumentBuilder()
      .setOpenAPIVersion('3.1.0')
      .setTitle('Subscription records')
      .setDescription('Customers and in-app purchase transactions per application, from store notifications.')
      .setVersion(PACKAGE_VERSION)
      .setLicense('Apache-2.0', 'https://www.apache.org/licenses/LICENSE-2.0')
      .addServer('/', 'This service')
      .addBearerAuth(
        {
          type: 'http',
          scheme: 'bearer',
          bearerFormat: 'JWT',
          description:
            'A JWT naming the application (`app` claim) with the scopes the operation lists: customers:read, transactions:read, customers:erase, purchases:write, entitlements:write. ' +
            "A token bound to one user (`applicationUsername` claim, the app's own) may only record purchases (docs/purchases.md).",
        },
        'bearer',
      )
      .addSecurity('pubsubOidc', {
        type: 'http',
        scheme: 'bearer',
        bearerFormat: 'JWT',
        description: 'The OIDC token a Pub/Sub push subscription puts on each message',
      })
      .build(),
  );
  document.components = {
    ...document.components,
    schemas: {
      ...document.components?.schemas,
      ...(COMPONENT_SCHEMAS as unknown as Record<string, object>),
    },
  };
  const apple = document.paths['/v2/notifications/apple/{appId}']?.post;
  // Apple authenticates by signing the payload, not the request.
  if (apple) apple.security = [];
  const google = document.paths['/v2/notifications/google/{appId}']?.post;
  if (google) google.security = [{ pubsubOidc: [] }];
  // Stripe signs the body (Stripe-Signature), not the request.
  const stripe = document.paths['/v2/notifications/stripe/{appId}']?.post;
  if (stripe) stripe.security = [];
  (document as unknown as Record<string, unknown>).webhooks = webhookPayloads;
  // A list sent as one parameter with literal commas (what the spec asks for), so Swagger UI's
  // "Try it out" and generated clients send `alice,bob` rather than `alice%2Cbob` (one name).
  const usernames = document.paths['/v2/customers']?.get?.parameters?.find((p) => 'name' in p && p.name === 'applicationUsername');
  if (usernames && 'name' in usernames) {
    Object.assign(usernames, {
      style: 'form',
      explode: false,
      schema: { type: 'array', items: { type: 'string' }, maxItems: 1000 },
      description:
        'Usernames to look up (at most 1000): comma-separated, each URL-encoded on its own (a comma inside a name is %2C), or the parameter repeated. When given, skip and limit are ignored.',
    });
    delete (usernames as { example?: unknown }).example;
  }
  return document;
}
