import { Transform } from 'class-transformer';
import { IsInt, IsOptional, IsUrl, Max, Min } from 'class-validator';
import { toDurationMs } from '../env-transforms.js';

/** Where the service fetches the European Central Bank's reference rates from (docs/exchange-rates.md). */
export class FxEnv {
  /**
   * The ECB's eurofxref.zip (or eurofxref.csv, or a mirror of either), fetched every FX_RATES_INTERVAL
   * by one instance; unset: no fetch, rates come from `fx import` only.
   */
  @IsOptional()
  @IsUrl({ require_tld: false, require_protocol: true, protocols: ['http', 'https'] }, { message: 'FX_RATES_URL must be an http(s) URL' })
  FX_RATES_URL?: string;

  /** How often FX_RATES_URL is fetched ("6h"); the ECB publishes once per business day, around 16:00 CET. */
  @Transform(toDurationMs)
  @IsInt({ message: 'FX_RATES_INTERVAL must be a duration such as 6h, 90m or 1d' })
  @Min(60_000)
  @Max(7 * 86_400_000)
  FX_RATES_INTERVAL = 6 * 3_600_000;
}
