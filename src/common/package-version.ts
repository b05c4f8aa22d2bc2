import { readFileSync } from 'node:fs';

/** The version in package.json (dist/ and src/ both sit one level below it). */
export const PACKAGE_VERSION = (JSON.parse(readFileSync(new URL('../../package.json', import.meta.url), 'utf8')) as { version: string }).version;
