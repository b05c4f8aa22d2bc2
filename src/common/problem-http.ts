import { ErrorCode } from './errors.js';
import { assertNever } from './assert-never.js';

export type Problem = {
  type: string;
  title: string;
  status: number;
  detail: string;
  code: ErrorCode;
  instance?: string;
  parameter?: string;
};

export const PROBLEM_CONTENT_TYPE = 'application/problem+json';
const TYPE_BASE = 'https://docs.subscription-records.dev/problems/';

export function httpStatusFor(code: ErrorCode): { status: number; title: string } {
  switch (code) {
    case ErrorCode.InvalidParameter:
      return { status: 400, title: 'Invalid request parameter' };
    case ErrorCode.BadRequest:
      return { status: 400, title: 'Bad request' };
    case ErrorCode.TokenMissing:
      return { status: 401, title: 'Authentication required' };
    case ErrorCode.TokenInvalid:
      return { status: 401, title: 'Invalid token' };
    case ErrorCode.TokenExpired:
      return { status: 401, title: 'Token expired' };
    case ErrorCode.InsufficientScope:
      return { status: 403, title: 'Insufficient scope' };
    case ErrorCode.AppClaimMissing:
      return { status: 403, title: 'Token names no application' };
    case ErrorCode.NotFound:
      return { status: 404, title: 'Not found' };
    case ErrorCode.MethodNotAllowed:
      return { status: 405, title: 'Method not allowed' };
    case ErrorCode.ServiceUnavailable:
      return { status: 503, title: 'Service unavailable' };
    case ErrorCode.DatabaseUnavailable:
      return { status: 503, title: 'Database unavailable' };
    case ErrorCode.NotificationUnverified:
      return { status: 400, title: 'Notification failed verification' };
    case ErrorCode.NotificationUnmappable:
      return { status: 422, title: 'Notification cannot be mapped onto the event contract' };
    case ErrorCode.EventLogUnavailable:
      return { status: 503, title: 'Event log unavailable' };
    case ErrorCode.StoreApiUnavailable:
      return { status: 503, title: 'Store API unavailable' };
    case ErrorCode.PurchaseUnverified:
      return { status: 422, title: 'Purchase failed verification' };
    case ErrorCode.PurchaseUnknown:
      return { status: 422, title: 'The store does not know this purchase' };
    case ErrorCode.StoreAccessNotConfigured:
      return { status: 422, title: 'Store access not configured for this application' };
    case ErrorCode.ReceiptOwnedByAnotherUser:
      return { status: 409, title: 'Purchase belongs to another user' };
    case ErrorCode.UsernameNotAllowed:
      return { status: 403, title: 'Not allowed for a token bound to a user' };
    case ErrorCode.Internal:
      return { status: 500, title: 'Internal server error' };
    default:
      return assertNever(code);
  }
}

export function problem(code: ErrorCode, detail: string, extra: Partial<Problem> = {}): Problem {
  const { status, title } = httpStatusFor(code);
  return { type: TYPE_BASE + code.replaceAll('_', '-'), title, status, detail, code, ...extra };
}

/** Nest/Fastify raise plain HTTP statuses for routing and body errors; give them a code too. */
export function codeForStatus(status: number): ErrorCode {
  if (status === 404) return ErrorCode.NotFound;
  if (status === 405) return ErrorCode.MethodNotAllowed;
  if (status === 401) return ErrorCode.TokenInvalid;
  if (status === 403) return ErrorCode.InsufficientScope;
  if (status === 503) return ErrorCode.ServiceUnavailable;
  if (status >= 400 && status < 500) return ErrorCode.BadRequest;
  return ErrorCode.Internal;
}
