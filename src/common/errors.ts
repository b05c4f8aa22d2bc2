/**
 * Stable machine-readable codes. Modules throw their own error classes carrying one of these;
 * transports map them (HTTP: problem-http.ts; Kafka consumer: projection/failure-policy.ts).
 */
export enum ErrorCode {
  InvalidParameter = 'invalid_parameter',
  TokenMissing = 'token_missing',
  TokenInvalid = 'token_invalid',
  TokenExpired = 'token_expired',
  InsufficientScope = 'insufficient_scope',
  AppClaimMissing = 'app_claim_missing',
  NotFound = 'not_found',
  MethodNotAllowed = 'method_not_allowed',
  BadRequest = 'bad_request',
  ServiceUnavailable = 'service_unavailable',
  DatabaseUnavailable = 'database_unavailable',
  NotificationUnverified = 'notification_unverified',
  NotificationUnmappable = 'notification_unmappable',
  EventLogUnavailable = 'event_log_unavailable',
  StoreApiUnavailable = 'store_api_unavailable',
  PurchaseUnverified = 'purchase_unverified',
  PurchaseUnknown = 'purchase_unknown',
  StoreAccessNotConfigured = 'store_access_not_configured',
  ReceiptOwnedByAnotherUser = 'receipt_owned_by_another_user',
  UsernameNotAllowed = 'username_not_allowed',
  Internal = 'internal_error',
}

export abstract class AppError extends Error {
  abstract readonly code: ErrorCode;
}

/** A request parameter failed validation; `parameter` names it in the problem response. */
export class InvalidParameterError extends AppError {
  readonly code = ErrorCode.InvalidParameter;
  constructor(
    readonly parameter: string,
    message: string,
  ) {
    super(message);
  }
}
