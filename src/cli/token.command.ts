import { refuseExtraArguments, UsageError } from './usage-error.js';
import { Inject } from '@nestjs/common';
import { Command, CommandRunner, Option } from 'nest-commander';
import { mintToken, parseTtl } from '../auth/mint-token.js';
import { READ_SCOPES, SCOPES } from '../auth/scopes.js';
import { applicationIdProblem } from '../common/application-id.js';
import { resolveVerificationKeys } from '../auth/signing-keys.js';
import { APP_CONFIG, type AppConfig } from '../config/app-config.js';

type TokenOptions = { app: string; scope?: string[]; ttl?: number; sub?: string; username?: string };

const DEFAULT_TTL_SECONDS = 3600;

@Command({
  name: 'token',
  description: 'Mint a bearer token (HS256, the configured or generated JWT secret) for one application',
})
export class TokenCommand extends CommandRunner {
  constructor(@Inject(APP_CONFIG) private readonly config: AppConfig) {
    super();
  }

  async run(args: string[], options: TokenOptions): Promise<void> {
    refuseExtraArguments('token', args);
    const keys = await resolveVerificationKeys(this.config);
    if (!keys.secret) {
      throw new Error('token needs JWT_SECRET: with only JWT_JWKS_URI configured, tokens come from your identity provider');
    }
    const scopes = options.scope?.length ? options.scope : [...READ_SCOPES];
    process.stdout.write(
      mintToken({
        secret: keys.secret,
        appId: options.app,
        scopes,
        ttlSeconds: options.ttl ?? DEFAULT_TTL_SECONDS,
        subject: options.sub,
        username: options.username,
        issuer: this.config.jwt.issuer,
        audience: this.config.jwt.audience,
      }) + '\n',
    );
  }

  @Option({ flags: '--app <id>', description: 'Application (tenant) id the token may read', required: true })
  parseApp(value: string): string {
    const problem = value.trim() ? applicationIdProblem(value) : 'must not be empty';
    if (problem) throw new UsageError(`--app ${problem}: the service refuses tokens for such an application id`);
    return value;
  }

  @Option({
    flags: '--scope <scopes...>',
    description: `Scopes (default: ${READ_SCOPES.join(' ')}; customers:erase, purchases:write and entitlements:write only when named)`,
  })
  parseScope(value: string, previous: string[] = []): string[] {
    const scopes = value.split(/[\s,]+/).filter(Boolean);
    for (const s of scopes) if (!(SCOPES as readonly string[]).includes(s)) throw new UsageError(`unknown scope "${s}"; known: ${SCOPES.join(', ')}`);
    return [...previous, ...scopes];
  }

  // No defaultValue: commander would print "(default: 3600)" after the description's "1h".
  @Option({ flags: '--ttl <duration>', description: 'Lifetime: seconds or 15m, 12h, 7d (default 1h)' })
  parseTtl(value: string): number {
    try {
      return parseTtl(value);
    } catch (error) {
      throw new UsageError((error as Error).message);
    }
  }

  @Option({ flags: '--sub <subject>', description: 'Subject claim (who the token is for)' })
  parseSub(value: string): string {
    return value;
  }

  @Option({
    flags: '--username <applicationUsername>',
    description: 'Bind the token to one user of the app (the applicationUsername claim): POST /v2/purchases then records purchases for that user only',
  })
  parseUsername(value: string): string {
    if (value === '') throw new UsageError('--username must not be empty');
    return value;
  }
}
