import { Transform } from 'class-transformer';
import { IsBoolean, IsInt, Max, Min } from 'class-validator';
import { toBool, toInt } from '../env-transforms.js';

/** Whether this instance projects the event log, and in what batches it reads the embedded one. */
export class IngestionEnv {
  @Transform(toBool)
  @IsBoolean()
  CONSUMER_ENABLED = true;

  @Transform(toInt)
  @IsInt()
  @Min(1)
  @Max(100_000)
  PROJECTION_BATCH_SIZE = 5000;
}
