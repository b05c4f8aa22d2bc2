import { assertNever } from '../common/assert-never.js';
import { RejectCode } from '../events/decode-event.js';

/** What the consumer does with a message it cannot project: keep it in the dead letters, or drop it. */
export type ConsumerAction = 'dead-letter' | 'skip';

/** A message that can never be projected goes to the dead letters; the partition moves on. */
export function actionForReject(code: RejectCode): ConsumerAction {
  switch (code) {
    case RejectCode.NotJson:
    case RejectCode.UnknownType:
    case RejectCode.SchemaViolation:
    case RejectCode.BadIdentifier:
    case RejectCode.Unstorable:
    case RejectCode.FutureTime:
    case RejectCode.ProjectionFailed:
    case RejectCode.TooLarge:
      return 'dead-letter';
    default:
      return assertNever(code);
  }
}
