import { ConfigError, loadConfig } from './app-config.js';

describe('loadConfig', () => {
  it('applies the documented defaults', () => {
    const config = loadConfig({});
    expect(config).toMatchObject({
      port: 3000,
      dataDir: './.data',
      logLevel: 'info',
      databaseUrl: undefined,
      kafka: undefined,
      eventLogTopic: 'purchase-events',
    });
    expect(Object.isFrozen(config)).toBe(true);
  });

  it('logs readable lines on a terminal and JSON elsewhere, unless LOG_FORMAT says which', () => {
    const tty = process.stdout.isTTY;
    try {
      process.stdout.isTTY = true;
      expect(loadConfig({}).logFormat).toBe('pretty');
      process.stdout.isTTY = false;
      expect(loadConfig({}).logFormat).toBe('json');
      expect(loadConfig({ LOG_FORMAT: 'pretty' }).logFormat).toBe('pretty');
      process.stdout.isTTY = true;
      expect(loadConfig({ LOG_FORMAT: 'json' }).logFormat).toBe('json');
    } finally {
      process.stdout.isTTY = tty;
    }
    expect(() => loadConfig({ LOG_FORMAT: 'xml' })).toThrow(/LOG_FORMAT must be one of the following values: auto, json, pretty/);
  });

  it('reads Kafka settings when KAFKA_BROKERS is set', () => {
    const config = loadConfig({
      KAFKA_BROKERS: 'a:9092, b:9092',
      KAFKA_TOPIC: 't',
      KAFKA_SASL_MECHANISM: 'plain',
      KAFKA_SASL_USERNAME: 'u',
      KAFKA_SASL_PASSWORD: 'p',
      KAFKA_SSL: 'true',
    });
    expect(config.kafka).toEqual({
      brokers: ['a:9092', 'b:9092'],
      topic: 't',
      groupId: 'subscription-read-models',
      clientId: 'subscription-records',
      ssl: true,
      sessionTimeoutMs: 30000,
      maxBytesPerPartition: 4194304,
      partitionsConcurrency: 2,
      roundShareMessages: 150,
      sasl: { mechanism: 'plain', username: 'u', password: 'p' },
    });
    expect(loadConfig({ KAFKA_BROKERS: 'a:9092', KAFKA_ROUND_SHARE_MESSAGES: '40' }).kafka?.roundShareMessages).toBe(40);
    expect(() => loadConfig({ KAFKA_BROKERS: 'a:9092', KAFKA_ROUND_SHARE_MESSAGES: '0' })).toThrow(/KAFKA_ROUND_SHARE_MESSAGES must not be less than 1/);
  });

  it('reads DATABASE_READ_URL as a list of replica URLs and DATABASE_READ_MAX_LAG as a duration, naming what is wrong', () => {
    expect(loadConfig({})).toMatchObject({ databaseReadUrls: [], databaseReadMaxLagMs: undefined });
    const config = loadConfig({
      DATABASE_URL: 'postgres://p/db',
      DATABASE_READ_URL: 'postgres://r1:5432/db, postgresql://u:pw@r2/db',
      DATABASE_READ_MAX_LAG: '30s',
    });
    expect(config).toMatchObject({ databaseReadUrls: ['postgres://r1:5432/db', 'postgresql://u:pw@r2/db'], databaseReadMaxLagMs: 30_000, warnings: [] });
    expect(() => loadConfig({ DATABASE_READ_URL: 'postgres://r1/db,http://r2/db' })).toThrow(/DATABASE_READ_URL must list postgres:\/\/ URLs/);
    expect(() => loadConfig({ DATABASE_READ_URL: ',' })).toThrow(/DATABASE_READ_URL must list at least one/);
    expect(() => loadConfig({ DATABASE_READ_URL: 'postgres://r1/db', DATABASE_READ_MAX_LAG: '30' })).toThrow(/DATABASE_READ_MAX_LAG must be a duration/);
    expect(() => loadConfig({ DATABASE_READ_MAX_LAG: '30s' })).toThrow(/DATABASE_READ_MAX_LAG needs DATABASE_READ_URL/);
  });

  it('takes one largest message size for every mode: EVENT_MAX_BYTES, or its former name KAFKA_MAX_MESSAGE_BYTES', () => {
    expect(loadConfig({}).eventMaxBytes).toBe(1_048_588); // the broker's message.max.bytes
    expect(loadConfig({ EVENT_MAX_BYTES: '2000000' }).eventMaxBytes).toBe(2_000_000);
    expect(loadConfig({ KAFKA_MAX_MESSAGE_BYTES: '3000000' })).toMatchObject({ eventMaxBytes: 3_000_000, warnings: [] });
    expect(loadConfig({ EVENT_MAX_BYTES: '2000000', KAFKA_MAX_MESSAGE_BYTES: '3000000' }).eventMaxBytes).toBe(2_000_000);
    // the service's heap (192 MB old space) must hold a message of this size while it is decoded
    expect(() => loadConfig({ EVENT_MAX_BYTES: String(16 * 1024 * 1024 + 1) })).toThrow(/EVENT_MAX_BYTES must not be greater than 16777216/);
    expect(() => loadConfig({ KAFKA_MAX_MESSAGE_BYTES: '100' })).toThrow(/KAFKA_MAX_MESSAGE_BYTES must not be less than 4096/);
  });

  it('takes CRYPTO_SHREDDING as a boolean, off by default, and refuses anything else by name', () => {
    expect(loadConfig({}).cryptoShredding).toBe(false);
    expect(loadConfig({ CRYPTO_SHREDDING: 'true' }).cryptoShredding).toBe(true);
    expect(() => loadConfig({ CRYPTO_SHREDDING: 'yes please' })).toThrow(/CRYPTO_SHREDDING must be a boolean value/);
  });

  it('refuses production without a way to verify tokens', () => {
    expect(() => loadConfig({ NODE_ENV: 'production' })).toThrow(/JWT_SECRET or JWT_JWKS_URI must be set/);
    expect(loadConfig({ NODE_ENV: 'production', JWT_JWKS_URI: 'https://id.example.com/jwks.json', ALLOW_EMBEDDED: 'true' }).jwt.jwksUri).toBe(
      'https://id.example.com/jwks.json',
    );
  });

  it('refuses the embedded PostgreSQL and event log in production unless ALLOW_EMBEDDED=true', () => {
    const production = { NODE_ENV: 'production', JWT_SECRET: 'q8vN2LmRt5XwZ0pKc7HyB3sJf9DgA4eU' };
    // KAFKA_BROKER is a typo: the service would otherwise fall back to the embedded log silently
    expect(() => loadConfig({ ...production, DATABASE_URL: 'postgres://db/x', KAFKA_BROKER: 'k:9092' })).toThrow(
      /KAFKA_BROKERS must be set when NODE_ENV=production/,
    );
    expect(() => loadConfig({ ...production, KAFKA_BROKERS: 'k:9092' })).toThrow(/DATABASE_URL must be set when NODE_ENV=production/);
    expect(loadConfig({ ...production, DATABASE_URL: 'postgres://db/x', KAFKA_BROKERS: 'k:9092' }).kafka?.brokers).toEqual(['k:9092']);
    expect(loadConfig({ ...production, ALLOW_EMBEDDED: 'true' }).databaseUrl).toBeUndefined();
  });

  it('starts an API-only instance in production with only DATABASE_URL, unless it takes store notifications', () => {
    const apiOnly = { NODE_ENV: 'production', JWT_SECRET: 'q8vN2LmRt5XwZ0pKc7HyB3sJf9DgA4eU', DATABASE_URL: 'postgres://db/x', CONSUMER_ENABLED: 'false' };
    expect(loadConfig(apiOnly)).toMatchObject({ consumerEnabled: false, kafka: undefined });
    // notifications would be appended to an embedded log that no Kafka consumer reads
    expect(() => loadConfig({ ...apiOnly, GOOGLE_APPS: 'demo:com.example.demo', GOOGLE_SERVICE_ACCOUNT_FILE: '/dev/null' })).toThrow(
      /KAFKA_BROKERS must be set when NODE_ENV=production/,
    );
    expect(() => loadConfig({ ...apiOnly, CONSUMER_ENABLED: 'true' })).toThrow(/KAFKA_BROKERS must be set when NODE_ENV=production/);
  });

  it('refuses a placeholder or trivially weak JWT_SECRET in production, and only there', () => {
    const production = { NODE_ENV: 'production', DATABASE_URL: 'postgres://db/x', KAFKA_BROKERS: 'k:9092' };
    for (const [secret, reason] of [
      ['change-me-to-a-long-random-secret-of-32-chars-or-more', 'looks like a placeholder'],
      ['your-secret-here-at-least-32-characters', 'looks like a placeholder'],
      ['x'.repeat(40), 'is one short string repeated'],
      ['abcd'.repeat(10), 'is one short string repeated'],
      ['aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaab', 'bits of entropy'],
      ['1111111111111111222222222222222233333333', 'bits of entropy'],
    ]) {
      expect(() => loadConfig({ ...production, JWT_SECRET: secret })).toThrow(new RegExp(`JWT_SECRET .*${reason}.*openssl rand -base64 32`));
      expect(loadConfig({ JWT_SECRET: secret }).jwt.secret).toBe(secret);
    }
    // what `openssl rand -hex 16` and `openssl rand -base64 32` print
    for (const secret of ['3f9a7c21be04d6e58a1f0c9b72de4a36', 'Jm1K7pQ0vX3r9ZsW+dYb8hT2uLc6nE4fGa5iOk=']) {
      expect(loadConfig({ ...production, JWT_SECRET: secret }).jwt.secret).toBe(secret);
    }
  });

  it('warns about unknown variables of its own prefixes, by name', () => {
    const config = loadConfig({ KAFKA_BROKER: 'k:9092', DATABASE_URI: 'x', JWT_SECRETS: 'y', WEBHOOK_MAX_AGES: '1', HOME: '/root', KAFKA_TOPIC: 't' });
    expect(config.warnings).toEqual([
      "unknown variable DATABASE_URI ignored (a typo? see the README's configuration table)",
      "unknown variable JWT_SECRETS ignored (a typo? see the README's configuration table)",
      "unknown variable KAFKA_BROKER ignored (a typo? see the README's configuration table)",
      "unknown variable WEBHOOK_MAX_AGES ignored (a typo? see the README's configuration table)",
    ]);
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

  // The store settings are colon-separated entries; a wrong one is named by its part and the form
  // that part must have, not by the whole entry's shape (a mistyped issuer id said "must be
  // appId:issuerId:keyId:path", which the entry was).
  describe('store app entries: the wrong part, by name and form', () => {
    const problemsOf = (env: Record<string, string>): string[] => {
      try {
        loadConfig(env);
        return [];
      } catch (error) {
        return (error as ConfigError).problems;
      }
    };
    const apple = (keys: string) =>
      problemsOf({ APPLE_APPS: 'demo-app:com.example.demo:Sandbox', APPLE_ROOT_CERTIFICATES: '/nonexistent/root.pem', APPLE_API_KEYS: keys }).filter((p) =>
        p.startsWith('APPLE_API_KEYS'),
      );
    const ISSUER = '57246542-96fe-1a63-e053-0824d011072a';

    it('APPLE_API_KEYS: an issuer id that is not a UUID', () => {
      expect(apple('demo-app:iss:KEY123:/x.p8')).toEqual([
        'APPLE_API_KEYS: "demo-app:iss:KEY123:/x.p8": the issuer id (2nd part) "iss" must be a UUID such as 57246542-96fe-1a63-e053-0824d011072a (App Store Connect, Users and Access, Integrations: Issuer ID)',
      ]);
    });

    it('APPLE_API_KEYS: a key id with other than letters and digits, or longer than any', () => {
      expect(apple(`demo-app:${ISSUER}:KEY-12:/x.p8`)).toEqual([
        `APPLE_API_KEYS: "demo-app:${ISSUER}:KEY-12:/x.p8": the key id (3rd part) "KEY-12" must be letters and digits: the key's 10-character Key ID, such as 2X9R4HXF34 (also in the file name SubscriptionKey_<keyId>.p8)`,
      ]);
      expect(apple(`demo-app:${ISSUER}:${'K'.repeat(33)}:/x.p8`)[0]).toMatch(/the key id \(3rd part\) "K{33}" must be letters and digits/);
    });

    it('APPLE_API_KEYS: missing parts, an empty path, a space in the app id', () => {
      expect(apple(`demo-app:${ISSUER}`)).toEqual([
        `APPLE_API_KEYS: "demo-app:${ISSUER}" must be appId:issuerId:keyId:path-to-.p8 (4 parts separated by ':'; got 2)`,
      ]);
      expect(apple(`demo-app:${ISSUER}:2X9R4HXF34:`)).toEqual([
        `APPLE_API_KEYS: "demo-app:${ISSUER}:2X9R4HXF34:": the path to the .p8 file (4th part) is empty`,
      ]);
      expect(apple(`demo app:${ISSUER}:2X9R4HXF34:/x.p8`)[0]).toBe(
        `APPLE_API_KEYS: "demo app:${ISSUER}:2X9R4HXF34:/x.p8": the app id (1st part) "demo app" must be an app id of APPLE_APPS, without spaces`,
      );
      // well-formed: what is left is the app and the file, named as before
      expect(apple(`demo-app:${ISSUER}:2X9R4HXF34:/nonexistent/key.p8`)).toEqual([
        expect.stringMatching(/^APPLE_API_KEYS: \/nonexistent\/key\.p8 \(app demo-app\) is not a readable In-App Purchase key/),
      ]);
    });

    it('APPLE_APPS: the environment and the app Apple ID, by name', () => {
      const appleApps = (apps: string) =>
        problemsOf({ APPLE_APPS: apps, APPLE_ROOT_CERTIFICATES: '/nonexistent/root.pem' }).filter((p) => p.startsWith('APPLE_APPS'));
      expect(appleApps('a:com.example.a:Prod')).toEqual([
        'APPLE_APPS: "a:com.example.a:Prod": the environment (3rd part) "Prod" must be Production or Sandbox',
      ]);
      expect(appleApps('a:com.example.a:Sandbox:12ab')).toEqual([
        'APPLE_APPS: "a:com.example.a:Sandbox:12ab": the app Apple ID (4th part) "12ab" must be a number of 1-15 digits (App Store Connect, App Information: Apple ID)',
      ]);
      expect(appleApps('a:com.example.a')).toEqual([
        'APPLE_APPS: "a:com.example.a" must be appId:bundleId:Production|Sandbox[:appAppleId] (3 or 4 parts separated by \':\'; got 2)',
      ]);
      expect(appleApps('a:com.example.a:Sandbox')).toEqual([]);
    });

    it('GOOGLE_APPS: the package name, by name', () => {
      const google = (apps: string) =>
        problemsOf({ GOOGLE_APPS: apps, GOOGLE_PUBSUB_AUDIENCE: 'aud', GOOGLE_SERVICE_ACCOUNT_FILE: '/nonexistent/key.json' }).filter((p) =>
          p.startsWith('GOOGLE_APPS'),
        );
      expect(google('demo:com')).toEqual([
        'GOOGLE_APPS: "demo:com": the package name (2nd part) "com" must look like com.example.app: two or more parts separated by dots, each starting with a letter, of letters, digits and _',
      ]);
      expect(google('demo:com.example:extra')).toEqual(['GOOGLE_APPS: "demo:com.example:extra" must be appId:packageName (2 parts separated by \':\'; got 3)']);
      expect(google('demo')).toEqual(['GOOGLE_APPS: "demo" must be appId:packageName (2 parts separated by \':\'; got 1)']);
      expect(google('demo:com.example.demo')).toEqual([]);
    });
  });

  it('STRIPE_APPS: a wrong entry is named by its application id and part, never by its secrets', () => {
    const problems = (entry: string): string[] => {
      try {
        loadConfig({ STRIPE_APPS: entry });
        return [];
      } catch (error) {
        return (error as ConfigError).problems;
      }
    };
    expect(problems('web:whsec_abcdefgh1234:rk_test_abcdefgh1234')).toEqual([]);
    const wrong = problems('web:notasecret-SHOULD-NOT-SHOW:sk_live_SECRETKEY-SHOULD-NOT-SHOW');
    expect(wrong).toEqual([
      'STRIPE_APPS: the 2nd part of "web"\'s entry must be the webhook endpoint\'s signing secret (whsec_..., Dashboard, Webhooks)',
      'STRIPE_APPS: the 3rd part of "web"\'s entry must be an API key (rk_test_..., rk_live_..., or sk_...): a restricted key with read access to subscriptions and invoices',
    ]);
    expect(wrong.join(' ')).not.toContain('SHOULD-NOT-SHOW');
    expect(problems('web:whsec_abcdefgh1234')).toEqual(['STRIPE_APPS: the entry of "web" must have 3 parts, appId:webhookSigningSecret:apiKey']);
  });
});
