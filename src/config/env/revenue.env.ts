import { Transform } from 'class-transformer';
import { IsString, Matches } from 'class-validator';
import { toList } from '../env-transforms.js';
import { COMMISSION_ENTRY, DEFAULT_COMMISSION } from '../../revenue/commission.js';

/** Proceeds on transactions and in /v2/revenue (docs/revenue.md, "Proceeds"). */
export class RevenueEnv {
  /**
   * The stores' commission in percent, comma-separated: platform=standard[/afterFirstYear] for every
   * app, appId:platform=... for one app (Apple's Small Business Program: appId:apple=15).
   */
  @Transform(toList)
  @IsString({ each: true })
  @Matches(COMMISSION_ENTRY, {
    each: true,
    message: 'STORE_COMMISSION entries must be [appId:]platform=percent[/percentAfterFirstYear], e.g. apple=30/15',
  })
  STORE_COMMISSION: string[] = DEFAULT_COMMISSION;
}
