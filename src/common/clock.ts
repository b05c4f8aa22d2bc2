/**
 * The request-time clock that activeSubscriber is evaluated against. The service uses the system
 * clock; tests pass their own to ask who is active at a chosen instant.
 */
export abstract class Clock {
  abstract now(): Date;
}

export class SystemClock extends Clock {
  now(): Date {
    return new Date();
  }
}
