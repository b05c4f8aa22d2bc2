import type { LoggerService } from '@nestjs/common';
import { pino, type Logger } from 'pino';

export function createPino(level: string): Logger {
  return pino({
    level,
    base: { service: 'subscription-records' },
    timestamp: pino.stdTimeFunctions.isoTime,
    // Belt and braces: request serializers do not log headers, but never let a token through.
    redact: { paths: ['req.headers.authorization', 'headers.authorization', '*.token', 'token'], remove: true },
  });
}

/** Routes Nest's own log calls into the same pino instance as Fastify's request logs. */
export class PinoNestLogger implements LoggerService {
  constructor(private readonly pino: Logger) {}
  log(message: unknown, context?: string) {
    this.write('info', message, context);
  }
  error(message: unknown, trace?: string, context?: string) {
    this.write('error', message, context, trace);
  }
  warn(message: unknown, context?: string) {
    this.write('warn', message, context);
  }
  debug(message: unknown, context?: string) {
    this.write('debug', message, context);
  }
  verbose(message: unknown, context?: string) {
    this.write('trace', message, context);
  }
  fatal(message: unknown, context?: string) {
    this.write('fatal', message, context);
  }
  private write(level: 'info' | 'error' | 'warn' | 'debug' | 'trace' | 'fatal', message: unknown, context?: string, trace?: string) {
    if (message instanceof Error) {
      this.pino[level]({ context, err: message }, message.message);
    } else if (message !== null && typeof message === 'object') {
      this.pino[level]({ context, trace, ...(message as object) });
    } else {
      this.pino[level]({ context, trace }, String(message));
    }
  }
}
