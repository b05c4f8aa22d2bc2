import { plainToInstance, type ClassConstructor } from 'class-transformer';
import { getMetadataStorage, validateSync } from 'class-validator';
import { InvalidParameterError } from './errors.js';

/**
 * Validates a parsed query string against a class-validator request class. Unknown parameters are
 * refused (a typo such as `startDate` would otherwise silently return unfiltered rows), and so is a
 * repeated one unless the class validates it element by element (`{ each: true }`): the query
 * parser makes `limit=1&limit=2` an array, which the value's own rule would call "not an integer".
 */
export function validateRequest<T extends object>(cls: ClassConstructor<T>, query: Record<string, unknown>): T {
  // Every own key, whatever its name: `__proto__` or `toString` must not pass as known.
  const { known, repeatable } = parametersOf(cls);
  for (const key of Reflect.ownKeys(query)) {
    if (typeof key !== 'string') continue;
    if (!known.has(key)) throw new InvalidParameterError(key, `unknown query parameter "${key.slice(0, 100)}"`);
    const value = query[key];
    if (Array.isArray(value) && !repeatable.has(key)) {
      throw new InvalidParameterError(key, `${key} must be given once; it is given ${value.length === 2 ? 'twice' : `${value.length} times`}`);
    }
  }
  const instance = plainToInstance(cls, query, { exposeDefaultValues: true });
  const [first] = validateSync(instance, { whitelist: true, forbidNonWhitelisted: true, stopAtFirstError: true });
  if (first) {
    const message = Object.values(first.constraints ?? {})[0] ?? `${first.property} is invalid`;
    const unknown = first.constraints?.whitelistValidation;
    throw new InvalidParameterError(first.property, unknown ? `unknown query parameter "${first.property}"` : message);
  }
  return instance;
}

type Parameters = { known: Set<string>; repeatable: Set<string> };
const parameters = new WeakMap<object, Parameters>();

function parametersOf(cls: ClassConstructor<object>): Parameters {
  let names = parameters.get(cls);
  if (!names) {
    const metadata = getMetadataStorage().getTargetValidationMetadatas(cls, '', true, false);
    names = { known: new Set(metadata.map((m) => m.propertyName)), repeatable: new Set(metadata.filter((m) => m.each).map((m) => m.propertyName)) };
    parameters.set(cls, names);
  }
  return names;
}
