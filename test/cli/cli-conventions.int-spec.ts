import { mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { runCli } from '../utils/processes.js';

// The built CLI (dist/cli.js) as a user runs it: help exits 0, a wrong command line exits 2 and a
// failing run exits 1, each with one line on stderr and never a stack or an object dump.
describe('CLI conventions (integration: the built CLI)', () => {
  const env = { DATA_DIR: mkdtempSync(path.join(tmpdir(), 'sr-cli-')) };
  const oneCleanLine = (stderr: string) => {
    const lines = stderr.trim().split('\n');
    expect(lines).toHaveLength(1);
    expect(lines[0]).toMatch(/^error: /);
    expect(stderr).not.toMatch(/\n\s+at |node:internal|\{\s*$/m);
  };

  it.each([['--version'], ['-V']])("%s prints package.json's version and exits 0", async (flag) => {
    const { version } = JSON.parse(readFileSync(path.join(import.meta.dirname, '../../package.json'), 'utf8')) as { version: string };
    const r = await runCli([flag], env);
    expect(r).toEqual({ code: 0, stdout: `${version}\n`, stderr: '' });
  });

  // The help of the program and of every command and subcommand: exit 0, on stdout, and an
  // option's default said once (commander appends "(default: x)" for a defaultValue; a description
  // saying it too showed it twice).
  it.each([
    '--help',
    'help',
    'help webhooks add',
    'token --help',
    'publish --help',
    'rebuild --help',
    'generate --help',
    'offsets --help',
    'offsets show --help',
    'offsets reset --help',
    'webhooks --help',
    'webhooks add --help',
    'webhooks list --help',
    'webhooks remove --help',
    'webhooks rotate-secret --help',
    'webhooks deliveries --help',
    'webhooks redeliver --help',
    'sample-notification --help',
    'move-to-kafka --help',
    'fx --help',
    'fx import --help',
    'reconcile --help',
    'entitlements --help',
    'entitlements set --help',
    'entitlements list --help',
    'entitlements remove --help',
  ])('%s exits 0 with the help on stdout, each default said once', async (line) => {
    const r = await runCli(line.split(' '), env);
    expect({ code: r.code, stderr: r.stderr }).toEqual({ code: 0, stderr: '' });
    expect(r.stdout).toMatch(/^Usage:/);
    // One entry per option, its wrapped lines joined.
    const options = r.stdout
      .split(/^Options:$/m)[1]
      .split(/^Commands:$/m)[0]
      .split(/\n(?= {2}-)/)
      .map((o) => o.replace(/\s+/g, ' ').trim());
    expect(options.length).toBeGreaterThan(0);
    expect(options.filter((o) => (o.match(/default/g)?.length ?? 0) > 1)).toEqual([]);
  });

  it('publish --help says where events go and what each exit status means', async () => {
    const r = await runCli(['publish', '--help'], env);
    const text = r.stdout.replace(/\s+/g, ' ');
    expect(text).toMatch(/Kafka topic KAFKA_TOPIC when KAFKA_BROKERS is set/);
    expect(text).toMatch(/embedded event log \(the event_log table/);
    expect(text).toMatch(/Exit 0: every line sent; 1: some lines refused or not sent \(each named by line number on stderr\)/);
    expect(text).toMatch(/2: usage error/);
  });

  it.each([
    [['bogus'], /unknown command 'bogus'/],
    [['token'], /required option '--app <id>' not specified/],
    [['token', '--app', 'x', 'extra'], /token takes no arguments \(got "extra"/],
    [['token', '--app', 'x', '--scope', 'nope'], /unknown scope "nope"/],
    // app ids the service refuses in a token's "app" claim are never minted
    [['token', '--app', 'a'.repeat(201)], /--app is 201 bytes in UTF-8; at most 200/],
    [['token', '--app', 'é'.repeat(101)], /--app is 202 bytes in UTF-8; at most 200/],
    [['token', '--app', 'demo\u0001app'], /--app contains a control character/],
    [['token', '--app', 'demo\napp'], /--app contains a control character/],
    [['token', '--app', 'demo\u0085app'], /--app contains a control character/],
    [['publish', 'a.ndjson', 'b.ndjson'], /publish takes at most 1 argument/],
    [['generate', '--events', 'x'], /--events must be a positive integer/],
    [['rebuild', '--verify', '--abort'], /--verify and --abort cannot be combined/],
    [['offsets', 'reset', '--to', 'earliest'], /offsets reset needs --partition/],
    [['webhooks', 'deliveries', '--id', 'abc'], /--id must be a webhook endpoint id/],
    [['webhooks'], /webhooks needs a subcommand/],
    [['sample-notification', 'google'], /sample-notification takes one store: apple/],
    // Every command and subcommand: commander's own refusals and the commands' checks alike.
    [['--bogus'], /unknown option '--bogus'/], // commander's refusals: program, command and subcommand level
    [['help', 'bogus'], /unknown command 'bogus'/],
    [['help', 'webhooks', 'nope'], /unknown command 'webhooks nope'/],
    [['token', '--app'], /option '--app <id>' argument missing/],
    [['token', '--app', 'x', '--ttl', '5x'], /--ttl must look like 3600, 15m, 12h or 7d/],
    [['token', '--app', 'x', '--ttl', '0'], /--ttl must be positive/],
    [['publish'], /missing required argument 'file'/],
    [['rebuild', 'extra'], /rebuild takes no arguments/],
    [['rebuild', '--bogus'], /unknown option '--bogus'/],
    [['generate', '--seed', '0'], /--seed must be a positive integer/],
    [['offsets'], /offsets needs a subcommand/],
    [['offsets', 'show', 'extra'], /offsets show takes no arguments/],
    [['offsets', 'reset', '--partition', '0'], /offsets reset needs --to/],
    [['offsets', 'reset', '--to', 'x', '--partition', '0'], /--to must be earliest, latest or an offset \(got "x"\)/],
    [['offsets', 'reset', '--to', '1', '--partition', 'x'], /--partition must be a partition number/],
    [['move-to-kafka', 'extra'], /move-to-kafka takes no arguments/],
    [['reconcile', 'extra'], /reconcile takes no arguments/],
    [['reconcile'], /reconcile needs --app/],
    [['reconcile', '--app', 'demo-app', '--all', '--suspect'], /reconcile takes --all or --suspect, not both/],
    [['move-to-kafka', '--batch-size', '0'], /--batch-size must be a positive integer \(got "0"\)/],
    // Checked before the database is opened: without one, these exited 1 saying none was running.
    [['webhooks', 'add'], /webhooks add needs --app/],
    [['webhooks', 'add', '--app', 'demo-app'], /webhooks add needs --url/],
    [['webhooks', 'add', '--bogus'], /unknown option '--bogus'/],
    [['webhooks', 'list', 'extra'], /webhooks list takes no arguments/],
    [['webhooks', 'remove'], /webhooks remove needs --id/],
    [['webhooks', 'rotate-secret'], /webhooks rotate-secret needs --id/],
    [['webhooks', 'rotate-secret', '--id', 'x'], /--id must be a webhook endpoint id/],
    [['webhooks', 'deliveries'], /webhooks deliveries needs --id/],
    [['webhooks', 'deliveries', '--id', '1', '--status', 'x'], /--status must be pending, delivered or failed/],
    [['webhooks', 'deliveries', '--id', '1', '--limit', '0'], /--limit must be a number from 1 to 9999/],
    [['webhooks', 'redeliver'], /webhooks redeliver needs --id/],
    [['webhooks', 'redeliver', '--id', '1', '--delivery', 'x'], /--delivery must be a delivery id/],
    [['sample-notification'], /missing required argument 'store'/],
    [['sample-notification', 'apple'], /sample-notification apple needs --bundle-id/],
    [['sample-notification', 'apple', '--bundle-id', 'b', '--type', 'X'], /--type must be one of/],
    [['sample-notification', 'apple', '--bundle-id', 'b', '--subscription', 'x'], /--subscription must be a number/],
    // A directory where a file is expected: said so, with what the option takes (it said EISDIR).
    [
      ['customers', 'erase', '--app', 'demo-app', '--file', tmpdir()],
      /^error: customers erase: --file \S+: it is a directory \(expected a file of usernames, one per line\)$/m,
    ],
  ])('%j is a usage error: exit 2, one line', async (args, message) => {
    const r = await runCli(args, env);
    expect({ code: r.code, stderr: r.stderr }).toEqual({ code: 2, stderr: expect.stringMatching(message) });
    oneCleanLine(r.stderr);
  });

  it('a run that fails exits 1 with one line naming why', async () => {
    const r = await runCli(['generate', '--events', '5', '--out', '/nonexistent/dir/x.ndjson'], env);
    expect(r.code).toBe(1);
    expect(r.stderr).toMatch(/cannot write \/nonexistent\/dir\/x\.ndjson: no such directory/);
    oneCleanLine(r.stderr);
  });

  it('publish of a file that is not there exits 1 with one line naming it', async () => {
    const r = await runCli(['publish', '/nonexistent/events.ndjson'], env);
    expect({ code: r.code, stderr: r.stderr.trim() }).toEqual({ code: 1, stderr: 'error: cannot read /nonexistent/events.ndjson: no such file' });
  });

  // It said EISDIR, after opening the event log.
  it('publish of a directory exits 1 with one line saying it is one and what publish takes', async () => {
    const dir = mkdtempSync(path.join(tmpdir(), 'sr-publish-dir-'));
    const r = await runCli(['publish', dir], env);
    expect({ code: r.code, stderr: r.stderr.trim() }).toEqual({
      code: 1,
      stderr: `error: cannot read ${dir}: it is a directory (expected an NDJSON file, or - for stdin)`,
    });
  });
});
