import { IsIn } from 'class-validator';

/** The log's variables, read where the logger is made (main.ts, cli.ts, http-app.ts). */
export class LoggingEnv {
  @IsIn(['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'])
  LOG_LEVEL = 'info';

  /** auto: readable lines on a terminal (development), JSON lines elsewhere (collectors, files, pipes). */
  @IsIn(['auto', 'json', 'pretty'])
  LOG_FORMAT: 'auto' | 'json' | 'pretty' = 'auto';
}
