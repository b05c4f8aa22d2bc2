import type { LoggerService } from '@nestjs/common';
import { pino, type DestinationStream, type Logger } from 'pino';
import { PinoPretty } from 'pino-pretty';

/**
 * `pretty` writes pino-pretty's coloured lines synchronously to stdout (a terminal in development:
 * no worker thread to lose lines at exit); `json` stays the format for collectors.
 */
export function createPino(level: string, destination?: DestinationStream, format: 'json' | 'pretty' = 'json'): Logger {
  const output =
    format === 'pretty' ? PinoPretty({ sync: true, destination: destination ?? 1, translateTime: 'SYS:HH:MM:ss.l', ignore: 'service' }) : destination;
  return pino(
    {
      level,
      base: { service: 'subscription-records' },
      timestamp: pino.stdTimeFunctions.isoTime,
      // Belt and braces: request serializers do not log headers, but never let a token through.
      redact: { paths: ['req.headers.authorization', 'headers.authorization', '*.token', 'token'], remove: true },
      serializers: {
        req: (req: { method?: string; url?: string; id?: string }) => ({
          method: req.method,
          url: req.url === undefined ? undefined : redactQuery(req.url),
          id: req.id,
        }),
      },
    },
    output as DestinationStream,
  );
}

/** Query parameters whose values never reach the logs: secrets sent by mistake, and personal data. */
export const REDACTED_QUERY_PARAMETERS = ['access_token', 'token', 'id_token', 'api_key', 'applicationUsername'];
const REDACTED = new Set(REDACTED_QUERY_PARAMETERS.map((p) => p.toLowerCase()));

export function redactQuery(url: string): string {
  const q = url.indexOf('?');
  if (q === -1) return url;
  const pairs = url
    .slice(q + 1)
    .split('&')
    .map((pair) => {
      const eq = pair.indexOf('=');
      const name = eq === -1 ? pair : pair.slice(0, eq);
      let decoded = name;
      try {
        decoded = decodeURIComponent(name);
      } catch {
        // keep the raw name
      }
      return eq !== -1 && REDACTED.has(decoded.toLowerCase()) ? `${name}=[redacted]` : pair;
    });
  return `${url.slice(0, q)}?${pairs.join('&')}`;
}

/**
 * Nest's start-up narration (a line per module, controller and route: ~35 a start) says nothing an
 * operator acts on: debug. Their warnings and errors keep their level.
 */
const BOOT_CONTEXTS = new Set(['NestFactory', 'InstanceLoader', 'RoutesResolver', 'RouterExplorer', 'NestApplication', 'CommandFactory']);

/** Routes Nest's own log calls into the same pino instance as Fastify's request logs. */
export class PinoNestLogger implements LoggerService {
  constructor(private readonly pino: Logger) {}
  log(message: unknown, context?: string) {
    this.write(context !== undefined && BOOT_CONTEXTS.has(context) ? 'debug' : 'info', message, context);
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
