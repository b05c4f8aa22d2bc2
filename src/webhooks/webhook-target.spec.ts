import { WebhookTargetError, checkWebhookTarget } from './webhook-target.js';

describe('checkWebhookTarget', () => {
  it('accepts https anywhere and http only to listed hosts', () => {
    expect(checkWebhookTarget('https://hooks.example.com/x', []).host).toBe('hooks.example.com');
    expect(checkWebhookTarget('http://127.0.0.1:8080/hook', ['127.0.0.1']).port).toBe('8080');
    expect(checkWebhookTarget('http://[::1]:8080/hook', ['::1']).pathname).toBe('/hook');
    expect(checkWebhookTarget('http://LOCALHOST/hook', ['localhost']).hostname).toBe('localhost');
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
});
