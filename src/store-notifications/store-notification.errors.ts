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
  ) {
    super(message);
  }
}
