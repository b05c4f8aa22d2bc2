import { readFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');

/** The node flags the service is deployed with: those of the Dockerfile's CMD (test/deploy/container-files.spec.ts checks everything else against them). */
export function deployedNodeFlags(): string[] {
  const cmd = JSON.parse(/^CMD (\[.*\])$/m.exec(readFileSync(path.join(root, 'Dockerfile'), 'utf8'))![1]) as string[];
  return cmd.slice(1, cmd.indexOf('dist/main.js'));
}
