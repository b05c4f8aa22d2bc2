import { AppError, ErrorCode } from '../common/errors.js';

/** A purchase handed over by an app or its backend that the service refuses, or cannot check now. */
export class PurchaseError extends AppError {
  constructor(
    readonly code:
      | ErrorCode.PurchaseUnverified
      | ErrorCode.PurchaseUnknown
      | ErrorCode.StoreAccessNotConfigured
      | ErrorCode.ReceiptOwnedByAnotherUser
      | ErrorCode.UsernameNotAllowed
      | ErrorCode.StoreApiUnavailable
      | ErrorCode.EventLogUnavailable,
    message: string,
    /** `cause`: what a library said, for the log only. */
    options?: { cause?: unknown },
  ) {
    super(message, options);
  }
}
