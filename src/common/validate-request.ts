import { plainToInstance, type ClassConstructor } from 'class-transformer';
import { getMetadataStorage, validateSync } from 'class-validator';
import { InvalidParameterError } from './errors.js';

/**
 * Validates a parsed query string against a class-validator request class. Unknown parameters are
 * refused (a typo such as `startDate` would otherwise silently return unfiltered rows).
 */
export function validateRequest<T extends object>(cls: ClassConstructor<T>, query: Record<string, unknown>): T {
  // Every own key, whatever its name: `__proto__` or `toString` must not pass as known.
  const known = knownParameters(cls);
  for (const key of Reflect.ownKeys(query)) {
    if (typeof key === 'string' && !known.has(key)) throw new InvalidParameterError(key, `unknown query parameter "${key.slice(0, 100)}"`);
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

const known = new WeakMap<object, Set<string>>();

function knownParameters(cls: ClassConstructor<object>): Set<string> {
  let names = known.get(cls);
  if (!names) {
    names = new Set(getMetadataStorage().getTargetValidationMetadatas(cls, '', true, false).map((m) => m.propertyName));
    known.set(cls, names);
  }
  return names;
}
