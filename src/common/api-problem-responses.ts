import { applyDecorators } from '@nestjs/common';
import { ApiResponse } from '@nestjs/swagger';
import { ErrorCode } from './errors.js';

/** RFC 9457 problem details, with this service's stable `code`. */
export const problemSchema = {
  type: 'object',
  required: ['type', 'title', 'status', 'detail', 'code'],
  properties: {
    type: { type: 'string' },
    title: { type: 'string' },
    status: { type: 'integer' },
    detail: { type: 'string' },
    code: { type: 'string', enum: Object.values(ErrorCode), description: 'Stable machine-readable code' },
    instance: { type: 'string' },
    parameter: { type: 'string', description: 'The offending query parameter (400 only)' },
  },
};

const content = { 'application/problem+json': { schema: { $ref: '#/components/schemas/Problem' } } };

/** Every answer but 200 a read endpoint can give. */
export function ApiProblemResponses() {
  return applyDecorators(
    ApiResponse({ status: 400, description: 'A query parameter is invalid (`parameter` names it)', content }),
    ApiResponse({ status: 401, description: 'Bearer token missing, invalid or expired (WWW-Authenticate says which)', content }),
    ApiResponse({ status: 403, description: 'Token lacks the scope or the app claim', content }),
    ApiResponse({ status: 405, description: 'Only GET and HEAD are served here (Allow lists them)', content }),
    ApiResponse({ status: 431, description: 'Request headers too large', content }),
    ApiResponse({ status: 500, description: 'Unexpected failure; nothing internal is shown', content }),
    ApiResponse({ status: 503, description: 'PostgreSQL is unavailable or too slow: retry after Retry-After seconds', content }),
  );
}

/** The answers of an endpoint a store calls: what it should retry (5xx) and what not (4xx). */
export function ApiNotificationProblemResponses(o: { bearer: boolean }) {
  return applyDecorators(
    ApiResponse({ status: 400, description: 'The notification failed verification or is not for this app (notification_unverified): not retried', content }),
    ...(o.bearer ? [ApiResponse({ status: 401, description: 'The push carries no valid OIDC token', content })] : []),
    ApiResponse({ status: 404, description: 'No store notifications are configured for this application', content }),
    ApiResponse({ status: 422, description: 'The notification maps to an event the contract refuses (notification_unmappable)', content }),
    ApiResponse({ status: 503, description: 'The event log or the store API is unavailable: retry after Retry-After seconds', content }),
  );
}
