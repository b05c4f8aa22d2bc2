import { Transform } from 'class-transformer';
import { IsInt, IsOptional, IsString, IsUrl, Max, Min, MinLength } from 'class-validator';
import { toDurationMs, toInt, toList } from '../env-transforms.js';

/** Where PostgreSQL is (or where the embedded one runs), its replicas, and how long an API query may take. */
export class DatabaseEnv {
  @IsOptional()
  @IsUrl({ protocols: ['postgres', 'postgresql'], require_tld: false, require_protocol: true })
  DATABASE_URL?: string;

  /**
   * Streaming replicas of DATABASE_URL's server, comma-separated: the read endpoints run on them
   * (docs/scaling.md); everything that writes stays on DATABASE_URL.
   */
  @IsOptional()
  @Transform(toList)
  @IsUrl(
    { protocols: ['postgres', 'postgresql'], require_tld: false, require_protocol: true },
    { each: true, message: 'DATABASE_READ_URL must list postgres:// URLs, comma-separated' },
  )
  DATABASE_READ_URL?: string[];

  /** A replica lagging more than this takes no reads, and with none left readiness fails. */
  @IsOptional()
  @Transform(toDurationMs)
  @IsInt({ message: 'DATABASE_READ_MAX_LAG must be a duration such as 30s, 5m or 500ms' })
  @Min(100)
  @Max(86_400_000)
  DATABASE_READ_MAX_LAG?: number;

  @IsString()
  @MinLength(1)
  DATA_DIR = './.data';

  @Transform(toInt)
  @IsInt()
  @Min(1024)
  @Max(65535)
  EMBEDDED_PG_PORT = 54329;

  /** PostgreSQL statement_timeout for API queries. */
  @Transform(toInt)
  @IsInt()
  @Min(100)
  @Max(600_000)
  STATEMENT_TIMEOUT_MS = 10_000;
}
