import { AppError, ErrorCode } from '../common/errors.js';

type AuthCode = ErrorCode.TokenMissing | ErrorCode.TokenInvalid | ErrorCode.TokenExpired | ErrorCode.InsufficientScope | ErrorCode.AppClaimMissing;

export class AuthError extends AppError {
  constructor(
    readonly code: AuthCode,
    message: string,
  ) {
    super(message);
  }
}
