import { plainToInstance, type ClassConstructor } from 'class-transformer';
import { validateSync } from 'class-validator';
import { InvalidParameterError } from './errors.js';

/**
 * Validates a parsed query string against a class-validator request class. Unknown parameters are
 * refused (a typo such as `startDate` would otherwise silently return unfiltered rows).
 */
export function validateRequest<T extends object>(cls: ClassConstructor<T>, query: Record<string, unknown>): T {
  const instance = plainToInstance(cls, query, { exposeDefaultValues: true });
  const [first] = validateSync(instance, { whitelist: true, forbidNonWhitelisted: true, stopAtFirstError: true });
  if (first) {
    const message = Object.values(first.constraints ?? {})[0] ?? `${first.property} is invalid`;
    const unknown = first.constraints?.whitelistValidation;
    throw new InvalidParameterError(first.property, unknown ? `unknown query parameter "${first.property}"` : message);
  }
  return instance;
}
