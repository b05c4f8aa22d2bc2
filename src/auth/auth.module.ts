import { Module } from '@nestjs/common';
import { PassportModule } from '@nestjs/passport';
import { APP_CONFIG, type AppConfig } from '../config/app-config.js';
import { JwtStrategy } from './jwt.strategy.js';
import { resolveVerificationKeys } from './signing-keys.js';
import { VERIFICATION_KEYS } from './tokens.js';

@Module({
  imports: [PassportModule.register({ session: false })],
  providers: [{ provide: VERIFICATION_KEYS, inject: [APP_CONFIG], useFactory: (config: AppConfig) => resolveVerificationKeys(config) }, JwtStrategy],
  exports: [VERIFICATION_KEYS],
})
export class AuthModule {}
