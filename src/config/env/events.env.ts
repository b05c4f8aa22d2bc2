import { Transform } from 'class-transformer';
import { IsInt, IsOptional, Max, Min } from 'class-validator';
import { toInt } from '../env-transforms.js';

/** What an event may be, in every mode: read by the publishers (CLI, store notifications, imports) and the projector. */
export class EventsEnv {
  /** An event timed further ahead of its log timestamp is dead-lettered (future_time). */
  @Transform(toInt)
  @IsInt()
  @Min(0)
  @Max(365 * 86_400_000)
  EVENT_TIME_MAX_SKEW_MS = 86_400_000;

  /**
   * The largest message (event with its key) the log takes, in every mode; default the broker's
   * message.max.bytes. `publish` refuses longer lines, consumers dead-letter longer messages
   * (too_large), dead-letter copies to <topic>.dlq are truncated to fit it.
   */
  @Transform(toInt)
  @IsInt()
  @Min(4096)
  @Max(16 * 1024 * 1024)
  EVENT_MAX_BYTES = 1_048_588;

  /** The former name of EVENT_MAX_BYTES, still read when that one is unset. */
  @IsOptional()
  @Transform(toInt)
  @IsInt()
  @Min(4096)
  @Max(16 * 1024 * 1024)
  KAFKA_MAX_MESSAGE_BYTES?: number;
}
