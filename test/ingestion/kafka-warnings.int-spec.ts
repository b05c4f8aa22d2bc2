import { spawnSync } from 'node:child_process';
import path from 'node:path';

// The built kafka client in a process of its own: Node writes warnings from its real `process`,
// which a Jest sandbox does not see.
const root = path.resolve(import.meta.dirname, '../..');
const warnsOnNegativeTimers = Number(process.versions.node.split('.')[0]) >= 23;

/** Where the warnings came from of a process that runs kafkajs's request-queue timer, then warns the same type itself. */
function warningsWith(importClient: boolean): string[] {
  const script = `
    import { createRequire } from 'node:module';
    ${importClient ? `await import(${JSON.stringify(path.join(root, 'dist/ingestion/kafka/kafka-client.js'))});` : ''}
    const RequestQueue = createRequire(${JSON.stringify(path.join(root, 'package.json'))})('kafkajs/src/network/requestQueue/index.js');
    const queue = new RequestQueue({ maxInFlightRequests: 1, requestTimeout: 1000, clientId: 'spec', broker: 'spec', logger: { debug() {} } });
    queue.scheduleCheckPendingRequests();
    setTimeout(() => { queue.destroy(); process.emitWarning('a warning of the same type from elsewhere', 'TimeoutNegativeWarning'); }, 20);`;
  const child = spawnSync(process.execPath, ['--trace-warnings', '--input-type=module', '-e', script], { cwd: root, encoding: 'utf8', timeout: 30_000 });
  expect(child.status).toBe(0);
  return child.stderr
    .split(/(?=\(node:\d+\) )/)
    .filter((warning) => warning.includes('TimeoutNegativeWarning'))
    .map((warning) => (warning.includes('requestQueue') ? 'kafkajs' : 'elsewhere'));
}

describe('kafka client (integration: the built module in its own Node process)', () => {
  it("drops the TimeoutNegativeWarning of kafkajs's request queue (kafkajs#1751), and only that", () => {
    expect(warningsWith(true)).toEqual(['elsewhere']);
    // the control: without the client's filter, Node 23+ prints kafkajs's too
    expect(warningsWith(false)).toEqual(warnsOnNegativeTimers ? ['kafkajs', 'elsewhere'] : ['elsewhere']);
  });
});
