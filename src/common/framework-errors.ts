import { STATUS_CODES } from 'node:http';
import { MAX_APPLICATION_ID_BYTES } from './application-id.js';
import { ErrorCode } from './errors.js';
import { codeForStatus, problem, type Problem } from './problem-http.js';

/**
 * What each path parameter takes (docs/api.md), said when the router refuses one before its route
 * (and the route's own check) runs. A parameter missing here still gets a problem naming it.
 */
const PATH_PARAMETER_RULES: Record<string, string> = {
  applicationUsername: '1-512 UTF-8 bytes of well-formed Unicode without NUL, percent-encoded',
  appId: `1-${MAX_APPLICATION_ID_BYTES} UTF-8 bytes of well-formed Unicode, percent-encoded`,
};
const ruleOf = (name: string) => PATH_PARAMETER_RULES[name] ?? 'percent-encoded well-formed UTF-8';

type Segment = string | { name: string };
type ParametricRoute = { methods: ReadonlySet<string>; segments: readonly Segment[] };

const decodes = (segment: string): boolean => {
  try {
    decodeURIComponent(segment);
    return true;
  } catch {
    return false;
  }
};

/**
 * The application's routes with path parameters (`/v2/customers/:applicationUsername`), so that a
 * refusal made by the router itself, which knows only the URL, can name the parameter at fault.
 */
export class PathParameters {
  private readonly routes: ParametricRoute[] = [];

  add(method: string | readonly string[], url: string): void {
    if (!url.includes(':')) return;
    // `:name` or `:name(regex)` as a whole segment, the only forms the controllers use.
    const segments = url.split('/').map((s): Segment => (s.startsWith(':') ? { name: s.slice(1).replace(/\(.*$/s, '') } : s));
    this.routes.push({ methods: new Set(typeof method === 'string' ? [method] : method), segments });
  }

  /** The parameter of a route of `method` matching `rawPath` whose raw segment `faulty` picks out. */
  find(method: string, rawPath: string, faulty: (segment: string) => boolean): string | undefined {
    const parts = rawPath.split('/');
    for (const route of this.routes) {
      if (!route.methods.has(method) || route.segments.length !== parts.length) continue;
      let found: string | undefined;
      let matches = true;
      route.segments.forEach((segment, i) => {
        if (typeof segment === 'string') matches &&= segment === parts[i];
        else if (found === undefined && faulty(parts[i] ?? '')) found = segment.name;
      });
      if (matches && found !== undefined) return found;
    }
    return undefined;
  }
}

/**
 * The problem for an error Fastify's router raises before any route, hook or filter runs: a URL
 * that is not percent-encoded UTF-8 (FST_ERR_BAD_URL), a path parameter over the router's
 * maxParamLength (FST_ERR_MAX_PARAM_LENGTH), or anything else it may add. Never the library's own
 * message or code: those carry the URL sent and say nothing a client can act on.
 */
export function frameworkProblem(
  error: Error & { code?: unknown; statusCode?: unknown },
  request: { method: string; url: string },
  routes: PathParameters,
  maxParamLength: number,
): Problem {
  const path = request.url.split('?')[0] ?? '';
  const instance = path;
  switch (error.code) {
    case 'FST_ERR_BAD_URL': {
      const name = routes.find(request.method, path, (segment) => !decodes(segment));
      if (name === undefined)
        return problem(ErrorCode.BadRequest, 'The request path is not valid: a percent sign must start an escape such as %20, and escapes must encode UTF-8.', {
          instance,
        });
      return problem(
        ErrorCode.InvalidParameter,
        `${name} is not percent-encoded UTF-8 (an invalid byte sequence or an unpaired surrogate); it must be ${ruleOf(name)}`,
        {
          instance,
          parameter: name,
        },
      );
    }
    case 'FST_ERR_MAX_PARAM_LENGTH': {
      const tooLong = (segment: string) => (decodes(segment) ? decodeURIComponent(segment) : segment).length > maxParamLength;
      const name = routes.find(request.method, path, tooLong);
      if (name === undefined) return problem(ErrorCode.BadRequest, `A path segment is over ${maxParamLength} characters.`, { instance });
      return problem(ErrorCode.InvalidParameter, `${name} is too long; it must be ${ruleOf(name)}`, { instance, parameter: name });
    }
    default: {
      const status = typeof error.statusCode === 'number' && error.statusCode >= 400 && error.statusCode <= 599 ? error.statusCode : 500;
      const detail = status >= 500 ? 'The server could not complete the request.' : (STATUS_CODES[status] ?? 'The request was refused.');
      return { ...problem(codeForStatus(status), detail, { instance }), status };
    }
  }
}
