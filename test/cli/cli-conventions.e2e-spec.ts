import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { runCli } from '../utils/processes.js';

// The built CLI (dist/cli.js) as a user runs it: help exits 0, a wrong command line exits 2 and a
// failing run exits 1, each with one line on stderr and never a stack or an object dump.
describe('CLI conventions (e2e: the built CLI)', () => {
  const env = { DATA_DIR: mkdtempSync(path.join(tmpdir(), 'sr-cli-')) };
  const oneCleanLine = (stderr: string) => {
    const lines = stderr.trim().split('\n');
    expect(lines).toHaveLength(1);
    expect(lines[0]).toMatch(/^error: /);
    expect(stderr).not.toMatch(/\n\s+at |node:internal|\{\s*$/m);
  };

  it.each(['--help', 'help', 'token --help', 'webhooks add --help', 'offsets reset --help'])('%s exits 0 with the help on stdout', async (line) => {
    const r = await runCli(line.split(' '), env);
    expect(r.code).toBe(0);
    expect(r.stdout).toMatch(/Usage:/);
    expect(r.stderr).toBe('');
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
});
