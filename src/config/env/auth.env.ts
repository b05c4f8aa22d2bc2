import { IsOptional, IsString, IsUrl, MinLength } from 'class-validator';

/** How bearer tokens are verified: an HS256 secret, or the identity provider's JWKS. */
export class AuthEnv {
  @IsOptional()
  @IsString()
  @MinLength(32, { message: 'JWT_SECRET must be at least 32 characters' })
  JWT_SECRET?: string;

  @IsOptional()
  @IsUrl({ require_tld: false, protocols: ['http', 'https'] })
  JWT_JWKS_URI?: string;

  @IsOptional()
  @IsString()
  JWT_ISSUER?: string;

  @IsOptional()
  @IsString()
  JWT_AUDIENCE?: string;
}
