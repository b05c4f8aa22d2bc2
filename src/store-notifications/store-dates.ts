import { ErrorCode } from '../common/errors.js';
import { StoreNotificationError } from './store-notification.errors.js';

/** The instants the event contract stores: years 0001-9999 in UTC, as decodeEvent checks them. */
const EARLIEST_MS = Date.parse('0001-01-01T00:00:00.000Z');
const LATEST_MS = Date.parse('9999-12-31T23:59:59.999Z');

export const isStorableMillis = (ms: number): boolean => Number.isFinite(ms) && ms >= EARLIEST_MS && ms <= LATEST_MS;

/**
 * Refuses (422) a decoded store payload with an epoch-millisecond date outside the years 0001-9999:
 * Apple names its dates `...Date` (signedDate, purchaseDate, expiresDate, ...). Beyond ±8.64e15 ms
 * such a number is not even a Date, and formatting it threw where the mapping reached it (a 500).
 */
export function refuseUnstorableDates(what: string, payload: object | null | undefined): void {
  if (!payload) return;
  for (const [field, value] of Object.entries(payload)) {
    if (field.endsWith('Date') && typeof value === 'number' && !isStorableMillis(value)) {
      throw new StoreNotificationError(ErrorCode.NotificationUnmappable, `${what}.${field} is not a date in the years 0001-9999 (epoch milliseconds ${value})`);
    }
  }
}

/**
 * Google's eventTimeMillis (a decimal string of epoch milliseconds): the Date, undefined when
 * absent; a 422 when it is not a storable instant.
 */
export function eventTimeOf(eventTimeMillis: unknown): Date | undefined {
  if (eventTimeMillis === undefined || eventTimeMillis === null || eventTimeMillis === '') return undefined;
  const ms =
    typeof eventTimeMillis === 'string' && /^-?\d{1,16}$/.test(eventTimeMillis)
      ? Number(eventTimeMillis)
      : typeof eventTimeMillis === 'number'
        ? eventTimeMillis
        : NaN;
  if (!isStorableMillis(ms)) {
    throw new StoreNotificationError(ErrorCode.NotificationUnmappable, 'eventTimeMillis is not epoch milliseconds in the years 0001-9999');
  }
  return new Date(ms);
}

/**
 * Runs a mapping onto the contract. A date it formats that is no Date (RangeError: Invalid time
 * value) is the notification's or the fetched state's fault, not the server's: 422, not 500.
 */
export function mapDates<T>(run: () => T): T {
  try {
    return run();
  } catch (error) {
    if (error instanceof RangeError) {
      throw new StoreNotificationError(ErrorCode.NotificationUnmappable, 'a date in the notification or the purchase state is not a valid date', {
        cause: error,
      });
    }
    throw error;
  }
}
