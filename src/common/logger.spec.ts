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
    expect(lines.map((l) => [l.level, l.msg])).toEqual([
      [30, 'applied migrations: 1'],
      [40, 'something to look at'],
    ]);
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

describe('createPino formats', () => {
  const write = async (format: 'json' | 'pretty') => {
    let out = '';
    const sink = new Writable({ write: (chunk, _enc, done) => ((out += String(chunk)), done()) });
    createPino('info', sink, format).info({ context: 'database' }, 'embedded PostgreSQL listening');
    await new Promise((r) => setImmediate(r));
    return out;
  };

  it('writes one JSON object a line for collectors', async () => {
    const out = await write('json');
    expect(JSON.parse(out)).toMatchObject({ level: 30, msg: 'embedded PostgreSQL listening', context: 'database', service: 'subscription-records' });
  });

  it('writes a readable line for a terminal: time, level and message, not JSON', async () => {
    const out = await write('pretty');
    expect(() => JSON.parse(out)).toThrow();
    expect(out).toMatch(/^\[\d\d:\d\d:\d\d\.\d{3}\] .*INFO.*: .*embedded PostgreSQL listening/);
    expect(out).toContain('context: "database"');
    expect(out).not.toContain('subscription-records');
  });
});
