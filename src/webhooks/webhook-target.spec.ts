import type { lookup as dnsLookup, LookupAddress } from 'node:dns';
import { InternalTargetError, WebhookTargetError, checkResolvedTarget, checkWebhookTarget, isInternalAddress, webhookLookup } from './webhook-target.js';

describe('checkWebhookTarget', () => {
  it('accepts https anywhere public and http only to listed hosts', () => {
    expect(checkWebhookTarget('https://hooks.example.com/x', []).host).toBe('hooks.example.com');
    expect(checkWebhookTarget('https://93.184.215.14/x', []).host).toBe('93.184.215.14');
    expect(checkWebhookTarget('https://[2606:4700:4700::1111]/x', []).hostname).toBe('[2606:4700:4700::1111]');
    expect(checkWebhookTarget('http://127.0.0.1:8080/hook', ['127.0.0.1']).port).toBe('8080');
    expect(checkWebhookTarget('http://[::1]:8080/hook', ['::1']).pathname).toBe('/hook');
    expect(checkWebhookTarget('http://LOCALHOST/hook', ['localhost']).hostname).toBe('localhost');
  });

  it('accepts an internal address over https when its host is listed in WEBHOOK_ALLOW_HOSTS', () => {
    expect(checkWebhookTarget('https://127.0.0.1:8443/hook', ['127.0.0.1']).port).toBe('8443');
    expect(checkWebhookTarget('https://[fd00::5]/hook', ['fd00::5']).hostname).toBe('[fd00::5]');
    // listed as written: the numeric form is the same host once parsed
    expect(checkWebhookTarget('https://2130706433/hook', ['127.0.0.1']).hostname).toBe('127.0.0.1');
  });

  it.each([
    ['http://hooks.example.com/x', 'hooks.example.com is not listed in WEBHOOK_ALLOW_HOSTS'],
    ['ftp://hooks.example.com/x', 'must use https (got ftp)'],
    ['not a url', 'must be an absolute https URL'],
    ['https://user:pw@hooks.example.com/', 'must not carry a user name or password'],
    ['http://127.0.0.2/', '127.0.0.2 is not listed'],
  ])('refuses %s: %s', (url, message) => {
    expect(() => checkWebhookTarget(url, ['127.0.0.1'])).toThrow(WebhookTargetError);
    expect(() => checkWebhookTarget(url, ['127.0.0.1'])).toThrow(message);
  });

  // Every spelling the WHATWG URL parser turns into an internal address; the second column is the
  // host it parses to, written by hand.
  it.each([
    ['https://127.0.0.1/', '127.0.0.1'],
    ['https://127.0.0.1./', '127.0.0.1'],
    ['https://2130706433/', '127.0.0.1'], // decimal
    ['https://0177.0.0.1/', '127.0.0.1'], // octal
    ['https://0x7f.1/', '127.0.0.1'], // hex, two parts
    ['https://0x7f000001/', '127.0.0.1'],
    ['https://017700000001/', '127.0.0.1'],
    ['https://127.1/', '127.0.0.1'],
    ['https://127.000.000.001/', '127.0.0.1'],
    ['https://%31%32%37.0.0.1/', '127.0.0.1'], // percent-encoded
    ['https://\uff11\uff12\uff17.0.0.1/', '127.0.0.1'], // full-width digits
    ['https://0.0.0.0/', '0.0.0.0'],
    ['https://0/', '0.0.0.0'],
    ['https://10.1.2.3:8443/x', '10.1.2.3'],
    ['https://100.64.0.1/', '100.64.0.1'],
    ['https://169.254.169.254/latest/meta-data/', '169.254.169.254'],
    ['https://2852039166/', '169.254.169.254'],
    ['https://172.16.0.1/', '172.16.0.1'],
    ['https://192.0.0.170/', '192.0.0.170'],
    ['https://192.168.1.1/', '192.168.1.1'],
    ['https://198.18.0.1/', '198.18.0.1'],
    ['https://224.0.0.1/', '224.0.0.1'],
    ['https://255.255.255.255/', '255.255.255.255'],
    ['https://[::]/', '::'],
    ['https://[::1]:8443/', '::1'],
    ['https://[0:0:0:0:0:0:0:1]/', '::1'],
    ['https://[::127.0.0.1]/', '::7f00:1'],
    ['https://[::ffff:127.0.0.1]/', '::ffff:7f00:1'],
    ['https://[::ffff:169.254.169.254]/', '::ffff:a9fe:a9fe'],
    ['https://[64:ff9b::10.0.0.1]/', '64:ff9b::a00:1'],
    ['https://[64:ff9b:1::1]/', '64:ff9b:1::1'],
    ['https://[fd00::1]/', 'fd00::1'],
    ['https://[FE80::1]/', 'fe80::1'],
    ['https://[ff02::1]/', 'ff02::1'],
  ])('refuses %s: internal host %s', (url, host) => {
    expect(() => checkWebhookTarget(url, [])).toThrow(InternalTargetError);
    expect(() => checkWebhookTarget(url, [])).toThrow(`the webhook URL's host ${host} is an internal address`);
    expect(() => checkWebhookTarget(url, [])).toThrow('list it in WEBHOOK_ALLOW_HOSTS');
  });

  it('leaves host names to the resolver checks', () => {
    expect(checkWebhookTarget('https://localhost:8443/', []).hostname).toBe('localhost');
  });
});

describe('isInternalAddress', () => {
  // Each range by its first and last address, and the public addresses just outside it
  // (IANA IPv4/IPv6 special-purpose address registries).
  it.each([
    ['0.0.0.0', '0.255.255.255'], // this network, RFC 791
    ['10.0.0.0', '10.255.255.255'], // private, RFC 1918
    ['100.64.0.0', '100.127.255.255'], // CGNAT, RFC 6598
    ['127.0.0.0', '127.255.255.255'], // loopback, RFC 1122
    ['169.254.0.0', '169.254.255.255'], // link-local, RFC 3927
    ['172.16.0.0', '172.31.255.255'], // private, RFC 1918
    ['192.0.0.0', '192.0.0.255'], // IETF protocol assignments, RFC 6890
    ['192.168.0.0', '192.168.255.255'], // private, RFC 1918
    ['198.18.0.0', '198.19.255.255'], // benchmarking, RFC 2544
    ['224.0.0.0', '239.255.255.255'], // multicast, RFC 5771
    ['240.0.0.0', '255.255.255.255'], // reserved and broadcast, RFC 1112 / RFC 919
    ['::', '::'], // unspecified, RFC 4291
    ['::1', '::1'], // loopback, RFC 4291
    ['::0.0.0.2', '::255.255.255.255'], // IPv4-compatible, deprecated, RFC 4291
    ['fc00::', 'fdff:ffff:ffff:ffff:ffff:ffff:ffff:ffff'], // unique local, RFC 4193
    ['fe80::', 'febf:ffff:ffff:ffff:ffff:ffff:ffff:ffff'], // link-local, RFC 4291
    ['fec0::', 'feff:ffff:ffff:ffff:ffff:ffff:ffff:ffff'], // site-local, RFC 3879
    ['ff00::', 'ffff:ffff:ffff:ffff:ffff:ffff:ffff:ffff'], // multicast, RFC 4291
    ['64:ff9b:1::', '64:ff9b:1:ffff:ffff:ffff:ffff:ffff'], // local-use NAT64, RFC 8215
  ])('%s to %s is internal', (first, last) => {
    expect(isInternalAddress(first)).toBe(true);
    expect(isInternalAddress(last)).toBe(true);
  });

  it.each([
    '169.254.169.254', // cloud metadata
    '100.100.100.200', // Alibaba Cloud metadata (inside CGNAT)
    '192.0.0.192', // Oracle Cloud metadata (inside 192.0.0/24)
    '::ffff:127.0.0.1', // IPv4-mapped, RFC 4291
    '::ffff:7f00:1',
    '::ffff:0.0.0.0',
    '::ffff:10.0.0.1',
    '::ffff:100.64.0.1',
    '::ffff:169.254.169.254',
    '::ffff:a9fe:a9fe',
    '::ffff:172.31.0.1',
    '::ffff:192.0.0.1',
    '::ffff:192.168.0.1',
    '::ffff:198.19.0.1',
    '::ffff:224.0.0.1',
    '::ffff:255.255.255.255',
    '64:ff9b::127.0.0.1', // NAT64 well-known prefix, RFC 6052
    '64:ff9b::7f00:1',
    '64:ff9b::0.0.0.0',
    '64:ff9b::10.0.0.1',
    '64:ff9b::100.64.0.1',
    '64:ff9b::a9fe:a9fe',
    '64:ff9b::172.16.0.1',
    '64:ff9b::192.0.0.1',
    '64:ff9b::c0a8:101', // 192.168.1.1
    '64:ff9b::198.18.0.1',
    '64:ff9b::239.0.0.1',
    '64:ff9b::255.255.255.255',
    '64:ff9b:1::8.8.8.8', // local-use NAT64: refused whatever it embeds
    'fe80::1%eth0', // with a zone
  ])('%s is internal', (address) => {
    expect(isInternalAddress(address)).toBe(true);
  });

  it.each([
    '1.0.0.0',
    '8.8.8.8',
    '9.255.255.255',
    '11.0.0.0',
    '93.184.215.14',
    '100.63.255.255',
    '100.128.0.0',
    '126.255.255.255',
    '128.0.0.0',
    '169.253.255.255',
    '169.255.0.0',
    '172.15.255.255',
    '172.32.0.0',
    '192.0.1.0',
    '192.167.255.255',
    '192.169.0.0',
    '198.17.255.255',
    '198.20.0.0',
    '223.255.255.255',
    '::ffff:8.8.8.8', // IPv4-mapped public address
    '::ffff:808:808',
    '64:ff9b::8.8.8.8', // NAT64 of a public address
    '64:ff9b::5db8:d70e', // 93.184.215.14
    '64:ff9b:2::1', // past the local-use NAT64 /48
    '2001:4860:4860::8888',
    '2606:4700:4700::1111',
    'fbff:ffff:ffff:ffff:ffff:ffff:ffff:ffff', // just below fc00::/7
    'fe00::', // between fc00::/7 and fe80::/10
    'fe7f:ffff:ffff:ffff:ffff:ffff:ffff:ffff',
    '::1:0:0:0', // past ::/96
  ])('%s is public', (address) => {
    expect(isInternalAddress(address)).toBe(false);
  });

  it('takes only IP addresses', () => {
    expect(() => isInternalAddress('localhost')).toThrow('not an IP address');
  });
});

/** A stand-in for dns.lookup answering from a table, counting its calls. */
function resolver(table: Record<string, string[] | NodeJS.ErrnoException>) {
  const calls: string[] = [];
  const lookup = ((
    hostname: string,
    options: { all?: boolean },
    callback: (e: NodeJS.ErrnoException | null, a: string | LookupAddress[], f?: number) => void,
  ) => {
    calls.push(hostname);
    const answer = table[hostname];
    if (answer instanceof Error) return callback(answer, '');
    const addresses = answer.map((address) => ({ address, family: address.includes(':') ? 6 : 4 }));
    if (options.all) callback(null, addresses);
    else callback(null, addresses[0].address, addresses[0].family);
  }) as unknown as typeof dnsLookup;
  return { lookup, calls };
}

const notFound = Object.assign(new Error('getaddrinfo ENOTFOUND nowhere.example'), { code: 'ENOTFOUND' });

/** What webhookLookup hands the connection: an error, or the addresses (the shape the caller asked for). */
function connectLookup(allowHosts: string[], lookup: typeof dnsLookup, hostname: string, all: boolean) {
  return new Promise<{ error: Error | null; address: string | LookupAddress[]; family?: number }>((resolve) =>
    webhookLookup(allowHosts, lookup)(hostname, { all }, (error, address, family) => resolve({ error, address, family })),
  );
}

describe('webhookLookup (every connection)', () => {
  const dns = resolver({
    'loopback.example': ['127.0.0.1'],
    'metadata.example': ['169.254.169.254'],
    'mapped.example': ['::ffff:7f00:1'],
    'mixed.example': ['93.184.215.14', '10.0.0.7'],
    'public.example': ['93.184.215.14', '2606:2800:21f:cb07:6820:80da:af6b:8b2c'],
    'nowhere.example': notFound,
  });

  it.each(['loopback.example', 'metadata.example', 'mapped.example', 'mixed.example'])('refuses %s, which resolves to an internal address', async (host) => {
    for (const all of [false, true]) {
      const { error, address } = await connectLookup([], dns.lookup, host, all);
      expect(error).toBeInstanceOf(InternalTargetError);
      expect(address).toBe('');
    }
  });

  it('hands the connection the addresses it checked, in the shape asked for', async () => {
    expect(await connectLookup([], dns.lookup, 'public.example', false)).toEqual({ error: null, address: '93.184.215.14', family: 4 });
    expect(await connectLookup([], dns.lookup, 'public.example', true)).toEqual({
      error: null,
      address: [
        { address: '93.184.215.14', family: 4 },
        { address: '2606:2800:21f:cb07:6820:80da:af6b:8b2c', family: 6 },
      ],
      family: undefined,
    });
  });

  it('resolves once per connection, so a rebinding name cannot pass a check and connect elsewhere', async () => {
    let answers = ['93.184.215.14', '127.0.0.1'];
    const calls: string[] = [];
    const rebinding = ((hostname: string, _o: unknown, callback: (e: null, a: LookupAddress[]) => void) => {
      calls.push(hostname);
      const address = answers[0];
      answers = answers.slice(1);
      callback(null, [{ address, family: 4 }]);
    }) as unknown as typeof dnsLookup;
    expect((await connectLookup([], rebinding, 'rebind.example', false)).address).toBe('93.184.215.14');
    expect((await connectLookup([], rebinding, 'rebind.example', false)).error).toBeInstanceOf(InternalTargetError);
    expect(calls).toEqual(['rebind.example', 'rebind.example']);
  });

  it('passes resolver errors on', async () => {
    expect((await connectLookup([], dns.lookup, 'nowhere.example', false)).error).toBe(notFound);
  });

  it('lets a host listed in WEBHOOK_ALLOW_HOSTS resolve to anything', async () => {
    expect(await connectLookup(['loopback.example'], dns.lookup, 'loopback.example', false)).toEqual({ error: null, address: '127.0.0.1', family: 4 });
    expect((await connectLookup(['metadata.example'], dns.lookup, 'loopback.example', false)).error).toBeInstanceOf(InternalTargetError);
  });
});

describe('checkResolvedTarget (registration)', () => {
  const dns = resolver({ 'loopback.example': ['127.0.0.1'], 'public.example': ['93.184.215.14'], 'nowhere.example': notFound });

  it('refuses a name resolving to an internal address, naming the host', async () => {
    await expect(checkResolvedTarget(new URL('https://loopback.example/x'), [], dns.lookup)).rejects.toThrow(
      "the webhook URL's host loopback.example resolves to an internal address (loopback, private, link-local or reserved); list it in WEBHOOK_ALLOW_HOSTS to send there",
    );
    await expect(checkResolvedTarget(new URL('https://loopback.example/x'), [], dns.lookup)).rejects.toBeInstanceOf(InternalTargetError);
  });

  it('takes a public name, a listed one, and one that does not resolve yet', async () => {
    await expect(checkResolvedTarget(new URL('https://public.example/x'), [], dns.lookup)).resolves.toBeUndefined();
    await expect(checkResolvedTarget(new URL('https://loopback.example/x'), ['loopback.example'], dns.lookup)).resolves.toBeUndefined();
    await expect(checkResolvedTarget(new URL('https://nowhere.example/x'), [], dns.lookup)).resolves.toBeUndefined();
  });

  it('resolves nothing for an IP address (checkWebhookTarget judged it)', async () => {
    const before = dns.calls.length;
    await checkResolvedTarget(new URL('https://93.184.215.14/x'), [], dns.lookup);
    await checkResolvedTarget(new URL('https://[2606:4700:4700::1111]/x'), [], dns.lookup);
    expect(dns.calls.length).toBe(before);
  });
});
