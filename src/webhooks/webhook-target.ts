/** A webhook URL the service refuses to send to; the message names why. */
export class WebhookTargetError extends Error {}

/**
 * https only, so payloads and signatures never cross the network in clear; plain http only to the
 * hosts the operator lists in WEBHOOK_ALLOW_HOSTS (a receiver on loopback, say).
 */
export function checkWebhookTarget(url: string, allowHosts: readonly string[]): URL {
  let target: URL;
  try {
    target = new URL(url);
  } catch {
    throw new WebhookTargetError(`the webhook URL must be an absolute https URL (got ${JSON.stringify(url)})`);
  }
  if (target.username || target.password) throw new WebhookTargetError('the webhook URL must not carry a user name or password');
  const host = target.hostname.toLowerCase().replace(/^\[(.*)\]$/, '$1');
  if (target.protocol === 'https:') return target;
  if (target.protocol === 'http:' && allowHosts.includes(host)) return target;
  throw new WebhookTargetError(
    target.protocol === 'http:'
      ? `the webhook URL must use https (${host} is not listed in WEBHOOK_ALLOW_HOSTS)`
      : `the webhook URL must use https (got ${target.protocol.replace(/:$/, '')})`,
  );
}
