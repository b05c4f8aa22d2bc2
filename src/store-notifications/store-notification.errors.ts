import { AppError, ErrorCode } from '../common/errors.js';

/** A store notification the service refuses (the store should not retry) or cannot take now (it should). */
export class StoreNotificationError extends AppError {
  constructor(
    readonly code:
      | ErrorCode.NotificationUnverified
      | ErrorCode.NotificationUnmappable
      | ErrorCode.EventLogUnavailable
      | ErrorCode.StoreApiUnavailable
      | ErrorCode.NotFound
      | ErrorCode.TokenMissing
      | ErrorCode.TokenInvalid,
    message: string,
    /** `cause`: what a library said, for the log only (the problem filter logs it; the answer never carries it). */
    options?: { cause?: unknown },
  ) {
    super(message, options);
  }
}
