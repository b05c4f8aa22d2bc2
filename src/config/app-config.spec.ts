import { ConfigError, loadConfig } from './app-config.js';

describe('loadConfig', () => {
  it('applies the documented defaults', () => {
    const config = loadConfig({});
    expect(config).toMatchObject({ port: 3000, dataDir: './.data', logLevel: 'info', databaseUrl: undefined, kafka: undefined, eventLogTopic: 'purchase-events' });
    expect(Object.isFrozen(config)).toBe(true);
  });

  it('reads Kafka settings when KAFKA_BROKERS is set', () => {
    const config = loadConfig({ KAFKA_BROKERS: 'a:9092, b:9092', KAFKA_TOPIC: 't', KAFKA_SASL_MECHANISM: 'plain', KAFKA_SASL_USERNAME: 'u', KAFKA_SASL_PASSWORD: 'p', KAFKA_SSL: 'true' });
    expect(config.kafka).toEqual({ brokers: ['a:9092', 'b:9092'], topic: 't', groupId: 'subscription-read-models', clientId: 'subscription-records', ssl: true, sessionTimeoutMs: 30000, maxBytesPerPartition: 4194304, partitionsConcurrency: 2, sasl: { mechanism: 'plain', username: 'u', password: 'p' } });
  });

  it('refuses production without a way to verify tokens', () => {
    expect(() => loadConfig({ NODE_ENV: 'production' })).toThrow(/JWT_SECRET or JWT_JWKS_URI must be set/);
    expect(loadConfig({ NODE_ENV: 'production', JWT_JWKS_URI: 'https://id.example.com/jwks.json' }).jwt.jwksUri).toBe('https://id.example.com/jwks.json');
  });

  it('names every wrong variable', () => {
    try {
      loadConfig({ PORT: 'eighty', DATABASE_URL: 'mysql://x', LOG_LEVEL: 'loud', JWT_SECRET: 'short', KAFKA_SASL_MECHANISM: 'plain' });
      throw new Error('expected ConfigError');
    } catch (error) {
      expect(error).toBeInstanceOf(ConfigError);
      const message = (error as ConfigError).message;
      for (const name of ['PORT', 'DATABASE_URL', 'LOG_LEVEL', 'JWT_SECRET', 'KAFKA_SASL_MECHANISM']) expect(message).toContain(name);
    }
  });
});
