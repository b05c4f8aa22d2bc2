import { Writable } from 'node:stream';
import { createPino, PinoNestLogger, redactQuery } from './logger.js';

describe('PinoNestLogger', () => {
  const capture = (level: string) => {
    const lines: { level: number; msg: string; context?: string }[] = [];
    const sink = new Writable({ write: (chunk, _enc, done) => (lines.push(JSON.parse(String(chunk))), done()) });
    return { logger: new PinoNestLogger(createPino(level, sink)), lines };
  };

  it("keeps Nest's start-up narration (modules, routes) out of info, and its warnings in", async () => {
    const { logger, lines } = capture('info');
    logger.log('Nest application successfully started', 'NestApplication');
    logger.log('AppModule dependencies initialized', 'InstanceLoader');
    logger.log('Mapped {/v2/customers, GET} route', 'RouterExplorer');
    logger.log('CustomersController {/v2/customers}:', 'RoutesResolver');
    logger.log('Starting Nest application...', 'NestFactory');
    logger.log('applied migrations: 1', 'database');
    logger.warn('something to look at', 'RouterExplorer');
    await new Promise((r) => setImmediate(r));
    expect(lines.map((l) => [l.level, l.msg])).toEqual([[30, 'applied migrations: 1'], [40, 'something to look at']]);
  });

  it('still shows the narration at debug', async () => {
    const { logger, lines } = capture('debug');
    logger.log('Mapped {/v2/customers, GET} route', 'RouterExplorer');
    await new Promise((r) => setImmediate(r));
    expect(lines.map((l) => [l.level, l.msg])).toEqual([[20, 'Mapped {/v2/customers, GET} route']]);
  });
});

describe('redactQuery', () => {
  it('hides the values of secret and personal-data parameters, keeps the rest', () => {
    expect(redactQuery('/v2/customers?access_token=eyJx.y.z&limit=5&applicationUsername=alice%40x.io,bob')).toBe(
      '/v2/customers?access_token=[redacted]&limit=5&applicationUsername=[redacted]',
    );
    expect(redactQuery('/v2/transactions?skip=1')).toBe('/v2/transactions?skip=1');
    expect(redactQuery('/health/live')).toBe('/health/live');
    expect(redactQuery('/x?%61ccess_token=secret')).toBe('/x?%61ccess_token=[redacted]');
  });
});
