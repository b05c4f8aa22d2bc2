import { readFileSync } from 'node:fs';
import { IsOptional, IsString } from 'class-validator';
import { KNOWN_VARIABLES, loadConfig, variablesOf } from './app-config.js';

/** The variable names in the cells of the README's configuration table (its rows, not the prose above it). */
function readmeTableVariables(): string[] {
  const readme = readFileSync(new URL('../../README.md', import.meta.url), 'utf8');
  const section = readme.split(/^## /m).find((s) => s.startsWith('Configuration\n'));
  if (!section) throw new Error('README.md has no "## Configuration" section');
  const rows = section.split('\n').filter((line) => line.startsWith('|'));
  const names = rows.flatMap((row) => [...row.matchAll(/`([A-Z][A-Z0-9]*(?:_[A-Z0-9]+)*)`/g)].map((m) => m[1]));
  return [...new Set(names)].sort();
}

describe('KNOWN_VARIABLES', () => {
  // Optional variables without a default are the ones a hand-kept list had to add (they hold no value,
  // and are no own key where class fields are not defined). Unknown, each would be warned about as a typo.
  it('knows the optional variables that have no default', () => {
    for (const name of ['JWT_JWKS_URI', 'KAFKA_SASL_PASSWORD', 'DATABASE_READ_MAX_LAG', 'GOOGLE_VOIDED_POLL_INTERVAL', 'APPLE_API_KEYS']) {
      expect([name, KNOWN_VARIABLES.has(name)]).toEqual([name, true]);
    }
    const optional = { JWT_JWKS_URI: 'https://id.example.com/jwks.json', KAFKA_SASL_PASSWORD: 'p', DATABASE_READ_MAX_LAG: '1m' };
    expect(loadConfig({ ...optional, DATABASE_READ_URL: 'postgres://r/db' }).warnings).toEqual([]);
  });

  it('knows every variable the README configuration table names, and the table names every one', () => {
    const documented = readmeTableVariables();
    // a table this short means the parsing above broke, not that the service reads so few
    expect(documented.length).toBeGreaterThan(50);
    expect(documented.filter((name) => !KNOWN_VARIABLES.has(name))).toEqual([]);
    expect([...KNOWN_VARIABLES].filter((name) => !documented.includes(name)).sort()).toEqual([]);
  });

  it('is not taken in by names that only look like ours', () => {
    for (const name of ['KAFKA_BROKER', 'JWT_SECRETS', 'HOME', 'PATH']) expect([name, KNOWN_VARIABLES.has(name)]).toEqual([name, false]);
  });
});

describe('variablesOf', () => {
  class First {
    @IsOptional()
    @IsString()
    SHARED?: string;

    @IsString()
    ONLY_FIRST = 'x';

    notAVariable = 1;
  }
  class Second {
    @IsOptional()
    @IsString()
    SHARED?: string;
  }

  it('takes the decorated properties of each slice, with or without a default', () => {
    expect(variablesOf([First]).get(First)).toEqual(['SHARED', 'ONLY_FIRST']);
  });

  it('refuses a variable in two slices, which the merged environment would read from one only', () => {
    expect(() => variablesOf([First, Second])).toThrow('SHARED is a variable of both First and Second');
  });
});
