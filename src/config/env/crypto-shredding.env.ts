import { Transform } from 'class-transformer';
import { IsBoolean } from 'class-validator';
import { toBool } from '../env-transforms.js';

export class CryptoShreddingEnv {
  /** Usernames in the events the service publishes itself sealed with a per-customer key (docs/privacy.md, "Crypto-shredding"). */
  @Transform(toBool)
  @IsBoolean()
  CRYPTO_SHREDDING = false;
}
