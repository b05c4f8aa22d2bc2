import { lookup as dnsLookup, type LookupAddress, type LookupOptions } from 'node:dns';
import { BlockList, isIP, type LookupFunction } from 'node:net';

/** A webhook URL the service refuses to send to; the message names why. */
export class WebhookTargetError extends Error {}

/** The target is (or resolves to) an internal address and its host is not in WEBHOOK_ALLOW_HOSTS. */
export class InternalTargetError extends WebhookTargetError {}

/**
 * What a delivery records when its target is refused as internal: never the address, the port or
 * how a connection went, or the delivery errors would map the inside of the network.
 */
export const TARGET_NOT_ALLOWED = 'target address not allowed';

/** IPv4 networks a webhook is never sent to (IANA special-purpose registries, RFC 6890). */
const INTERNAL_IPV4: readonly (readonly [string, number])[] = [
  ['0.0.0.0', 8], // "this network" (RFC 791); 0.0.0.0 reaches the local host
  ['10.0.0.0', 8], // private (RFC 1918)
  ['100.64.0.0', 10], // shared address space, carrier-grade NAT (RFC 6598)
  ['127.0.0.0', 8], // loopback (RFC 1122)
  ['169.254.0.0', 16], // link-local (RFC 3927): cloud metadata services at 169.254.169.254
  ['172.16.0.0', 12], // private (RFC 1918)
  ['192.0.0.0', 24], // IETF protocol assignments (RFC 6890)
  ['192.168.0.0', 16], // private (RFC 1918)
  ['198.18.0.0', 15], // benchmarking (RFC 2544)
  ['224.0.0.0', 4], // multicast (RFC 5771)
  ['240.0.0.0', 4], // reserved (RFC 1112), with the limited broadcast 255.255.255.255 (RFC 919)
];

/** IPv6 networks a webhook is never sent to. */
const INTERNAL_IPV6: readonly (readonly [string, number])[] = [
  ['::', 96], // unspecified :: and loopback ::1 (RFC 4291), and the deprecated IPv4-compatible ::a.b.c.d
  ['64:ff9b:1::', 48], // local-use NAT64 (RFC 8215): translated into whichever IPv4 network the site chose
  ['fc00::', 7], // unique local (RFC 4193)
  ['fe80::', 10], // link-local (RFC 4291)
  ['fec0::', 10], // site-local, deprecated (RFC 3879) but still routed by some networks
  ['ff00::', 8], // multicast (RFC 4291)
];

/** IPv6 prefixes whose last 32 bits are an IPv4 address: IPv4-mapped (RFC 4291), well-known NAT64 (RFC 6052). */
const IPV4_CARRIERS = ['::ffff:', '64:ff9b::'];

const internal = new BlockList();
for (const [network, prefix] of INTERNAL_IPV4) {
  internal.addSubnet(network, prefix, 'ipv4');
  for (const carrier of IPV4_CARRIERS) internal.addSubnet(carrier + network, 96 + prefix, 'ipv6');
}
for (const [network, prefix] of INTERNAL_IPV6) internal.addSubnet(network, prefix, 'ipv6');

/** Whether an IP address (textual, IPv4 or IPv6) is one a webhook must not reach unless allowlisted. */
export function isInternalAddress(address: string): boolean {
  const family = isIP(address);
  if (family === 0) throw new TypeError(`not an IP address: ${JSON.stringify(address)}`);
  return internal.check(address, family === 4 ? 'ipv4' : 'ipv6');
}

/** The URL's host as WEBHOOK_ALLOW_HOSTS lists it: lower case, an IPv6 address without brackets. */
const hostOf = (target: URL) => target.hostname.toLowerCase().replace(/^\[(.*)\]$/, '$1');

/**
 * https only, so payloads and signatures never cross the network in clear, and never to an internal
 * address (loopback, private, link-local, ...) given as an IP: unless the host is listed in
 * WEBHOOK_ALLOW_HOSTS, which allows both (a receiver on loopback, say). A host name is checked
 * against what it resolves to by `checkResolvedTarget` and, on every connection, `webhookLookup`.
 * Numeric forms (2130706433, 0177.0.0.1, 0x7f.1) come out of the URL parser as dotted IPv4.
 */
export function checkWebhookTarget(url: string, allowHosts: readonly string[]): URL {
  let target: URL;
  try {
    target = new URL(url);
  } catch {
    throw new WebhookTargetError(`the webhook URL must be an absolute https URL (got ${JSON.stringify(url)})`);
  }
  if (target.username || target.password) throw new WebhookTargetError('the webhook URL must not carry a user name or password');
  const host = hostOf(target);
  if (target.protocol !== 'https:' && !(target.protocol === 'http:' && allowHosts.includes(host))) {
    throw new WebhookTargetError(
      target.protocol === 'http:'
        ? `the webhook URL must use https (${host} is not listed in WEBHOOK_ALLOW_HOSTS)`
        : `the webhook URL must use https (got ${target.protocol.replace(/:$/, '')})`,
    );
  }
  if (!allowHosts.includes(host) && isIP(host) !== 0 && isInternalAddress(host)) {
    throw new InternalTargetError(
      `the webhook URL's host ${host} is an internal address (loopback, private, link-local or reserved); list it in WEBHOOK_ALLOW_HOSTS to send there`,
    );
  }
  return target;
}

/**
 * The `lookup` of every webhook connection: resolves the name and hands the connection the very
 * addresses it checked, so a name cannot resolve to a public address for a check and to an internal
 * one for the connection (DNS rebinding). A name with any internal address is refused whole, unless
 * it is listed in WEBHOOK_ALLOW_HOSTS. (A connection to an IP given in the URL resolves nothing:
 * `checkWebhookTarget` checks it.)
 */
export function webhookLookup(allowHosts: readonly string[], lookup: typeof dnsLookup = dnsLookup): LookupFunction {
  return (hostname, options, callback) => {
    if (allowHosts.includes(hostname.toLowerCase())) return lookup(hostname, options, callback);
    lookup(hostname, { ...options, all: true }, (error: NodeJS.ErrnoException | null, addresses: LookupAddress[]) => {
      if (error) return callback(error, '');
      if (addresses.length === 0 || addresses.some((a) => isInternalAddress(a.address))) {
        return callback(new InternalTargetError(`${hostname} resolves to an internal address`), '');
      }
      if (options.all) return callback(null, addresses);
      callback(null, addresses[0].address, addresses[0].family);
    });
  };
}

/**
 * At registration: refuses a host name that resolves to an internal address now. One that does not
 * resolve yet is taken; every connection checks again.
 */
export async function checkResolvedTarget(target: URL, allowHosts: readonly string[], lookup: typeof dnsLookup = dnsLookup): Promise<void> {
  const host = hostOf(target);
  if (isIP(host) !== 0) return;
  const refused = await new Promise<Error | null>((resolve) =>
    webhookLookup(allowHosts, lookup)(host, { all: true } satisfies LookupOptions, (error) => resolve(error)),
  );
  if (refused instanceof InternalTargetError) {
    throw new InternalTargetError(
      `the webhook URL's host ${host} resolves to an internal address (loopback, private, link-local or reserved); list it in WEBHOOK_ALLOW_HOSTS to send there`,
    );
  }
}
