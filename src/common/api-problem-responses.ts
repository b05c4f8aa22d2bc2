import { applyDecorators } from '@nestjs/common';
import { ApiResponse } from '@nestjs/swagger';

const problemSchema = {
  type: 'object',
  required: ['type', 'title', 'status', 'detail', 'code'],
  properties: {
    type: { type: 'string' },
    title: { type: 'string' },
    status: { type: 'integer' },
    detail: { type: 'string' },
    code: { type: 'string' },
    instance: { type: 'string' },
    parameter: { type: 'string', description: 'The offending query parameter (400 only)' },
  },
};

export function ApiProblemResponses() {
  const content = { 'application/problem+json': { schema: problemSchema } };
  return applyDecorators(
    ApiResponse({ status: 400, description: 'A query parameter is invalid', content }),
    ApiResponse({ status: 401, description: 'Bearer token missing, invalid or expired', content }),
    ApiResponse({ status: 403, description: 'Token lacks the scope or the app claim', content }),
  );
}
