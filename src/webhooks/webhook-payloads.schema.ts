const message = (type: string, data: object, description: string) => ({
  post: {
    summary: type,
    description,
    operationId: type.replace(/\.(\w)/, (_, c: string) => c.toUpperCase()),
    parameters: [
      {
        name: 'webhook-id',
        in: 'header',
        required: true,
        schema: { type: 'string' },
        description: 'Unique per message, the same on every retry: dedupe on it',
      },
      { name: 'webhook-timestamp', in: 'header', required: true, schema: { type: 'string' }, description: 'Unix seconds when this attempt was signed' },
      {
        name: 'webhook-signature',
        in: 'header',
        required: true,
        schema: { type: 'string' },
        description: 'Standard Webhooks signatures (v1,<base64 HMAC-SHA256>), space-separated; two while a rotated-out secret is still honoured',
      },
    ],
    requestBody: {
      required: true,
      content: {
        'application/json': {
          schema: {
            type: 'object',
            required: ['type', 'timestamp', 'data'],
            properties: {
              type: { type: 'string', enum: [type] },
              timestamp: { type: 'string', format: 'date-time', description: 'When the change was queued' },
              data,
            },
          },
        },
      },
    },
    // The receiver checks the signature (Standard Webhooks), not a credential of this service.
    security: [],
    responses: { '2XX': { description: 'Taken: any 2xx. Anything else (or no answer within WEBHOOK_TIMEOUT_MS) is retried with backoff' } },
  },
});

/**
 * The messages sent to registered endpoints (docs/change-feed.md): the document's `webhooks`.
 */
export const webhookPayloads = {
  'customer.updated': message(
    'customer.updated',
    { $ref: '#/components/schemas/CustomerSummary' },
    'A customer row changed: the CustomerSummary as GET /v2/customers returns it (activeSubscriber as of the timestamp)',
  ),
  'customer.deleted': message(
    'customer.deleted',
    { $ref: '#/components/schemas/CustomerSummary' },
    'A customer row was removed (erased: docs/privacy.md): {"applicationUsername": <the key your copy is stored under>, "customerInfo": {}, "receiptIds": [], "deleted": true}; delete your copy. ' +
      'Sent only to endpoints registered before the removal (docs/change-feed.md, "Deletions")',
  ),
  'transaction.updated': message(
    'transaction.updated',
    { $ref: '#/components/schemas/Transaction' },
    'A transaction row changed: the Transaction as GET /v2/transactions returns it',
  ),
  'transaction.deleted': message(
    'transaction.deleted',
    { $ref: '#/components/schemas/Transaction' },
    'A transaction row was removed by a rebuild from a partial log (docs/change-feed.md, "Rebuilds"): {"transactionId": <the key your copy is stored under>, "deleted": true, ' +
      "purchaseId, productId and receiptId empty, platform the id's prefix}; delete your copy. Sent only to endpoints registered before the removal",
  ),
};
