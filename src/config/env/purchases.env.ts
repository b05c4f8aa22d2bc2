import { Transform } from 'class-transformer';
import { IsIn, IsInt, IsOptional, IsString, Matches, Max, Min } from 'class-validator';
import { toDurationMs, toList } from '../env-transforms.js';

/** POST /v2/purchases (docs/purchases.md): who keeps a receipt another user hands over, and how long an answer waits for the projection. */
export class PurchasesEnv {
  /** What happens when a purchase already belongs to another user, for every app not in PURCHASE_OWNERSHIP_BY_APP: transfer (it moves) or keep (409). */
  @IsIn(['transfer', 'keep'], { message: 'PURCHASE_OWNERSHIP must be transfer or keep' })
  PURCHASE_OWNERSHIP: 'transfer' | 'keep' = 'transfer';

  /** appId:transfer|keep, comma-separated: the rule of each app that differs from PURCHASE_OWNERSHIP. */
  @IsOptional()
  @Transform(toList)
  @IsString({ each: true })
  @Matches(/^[^:]+:(transfer|keep)$/, { each: true, message: 'PURCHASE_OWNERSHIP_BY_APP entries must be appId:transfer or appId:keep' })
  PURCHASE_OWNERSHIP_BY_APP?: string[];

  /** How long POST /v2/purchases waits for the projection to show the purchase before answering 202 ("5s", "500ms"). */
  @Transform(toDurationMs)
  @IsInt({ message: 'PURCHASE_WAIT must be a duration such as 5s or 500ms' })
  @Min(0)
  @Max(60_000)
  PURCHASE_WAIT = 5_000;
}
