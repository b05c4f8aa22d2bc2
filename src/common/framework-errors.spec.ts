import { frameworkProblem, PathParameters } from './framework-errors.js';

const routes = new PathParameters();
routes.add('DELETE', '/v2/customers/:applicationUsername');
routes.add(['POST'], '/v2/notifications/apple/:appId');
routes.add('GET', '/v2/customers');

const fastifyError = (code: string, statusCode: number) => Object.assign(new Error(`'/x' is a library message`), { code, statusCode });
const badUrl = fastifyError('FST_ERR_BAD_URL', 400);
const tooLong = fastifyError('FST_ERR_MAX_PARAM_LENGTH', 414);

describe('frameworkProblem: refusals of the router, as problems', () => {
  it.each(['/v2/customers/a%C3%28', '/v2/customers/a%ED%A0%80', '/v2/customers/%', '/v2/customers/ok%FF?x=1'])(
    'DELETE %s: invalid_parameter naming applicationUsername',
    (url) => {
      const body = frameworkProblem(badUrl, { method: 'DELETE', url }, routes, 1536);
      expect(body).toMatchObject({ status: 400, code: 'invalid_parameter', parameter: 'applicationUsername', instance: url.split('?')[0] });
      expect(body.detail).toContain('512 UTF-8 bytes');
      expect(JSON.stringify(body)).not.toMatch(/FST_|library/);
    },
  );

  it('an over-long username: 400 invalid_parameter naming it and its limit', () => {
    const body = frameworkProblem(tooLong, { method: 'DELETE', url: `/v2/customers/${'x'.repeat(1537)}` }, routes, 1536);
    expect(body).toMatchObject({ status: 400, code: 'invalid_parameter', parameter: 'applicationUsername' });
    expect(body.detail).toBe('applicationUsername is too long; it must be 1-512 UTF-8 bytes of well-formed Unicode without NUL, percent-encoded');
  });

  it('names the parameter of the route the method and static segments match', () => {
    expect(frameworkProblem(badUrl, { method: 'POST', url: '/v2/notifications/apple/%C3%28' }, routes, 1536)).toMatchObject({
      parameter: 'appId',
      code: 'invalid_parameter',
    });
    // No DELETE route there, nor a parameter: the request, not a parameter, is at fault.
    for (const [method, url] of [
      ['GET', '/v2/customers/a%C3%28'],
      ['DELETE', '/v2/cust%C3%28omers/alice'],
      ['DELETE', '/v2/customers/a%C3%28/more'],
    ]) {
      const body = frameworkProblem(badUrl, { method, url }, routes, 1536);
      expect(body).toMatchObject({ status: 400, code: 'bad_request' });
      expect(body.parameter).toBeUndefined();
    }
  });

  it('anything else the router may raise: a problem with its status, never its message', () => {
    const body = frameworkProblem(fastifyError('FST_ERR_ASYNC_CONSTRAINT', 500), { method: 'GET', url: '/v2/customers' }, routes, 1536);
    expect(body).toMatchObject({ status: 500, code: 'internal_error', detail: 'The server could not complete the request.' });
    expect(frameworkProblem(fastifyError('FST_SOMETHING_NEW', 404), { method: 'GET', url: '/x' }, routes, 1536)).toMatchObject({
      status: 404,
      code: 'not_found',
      detail: 'Not Found',
    });
  });
});
