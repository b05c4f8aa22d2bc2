import { Transform, type Readable } from 'node:stream';

/**
 * The shape of JSON a store notification can have, checked on the bytes as they arrive, before
 * JSON.parse: a body nested or repeated past these is refused while it is read, at the cost of one
 * pass over its bytes. Apple's body is one string member (depth 1); a Pub/Sub push is
 * `{message: {attributes: {...}, data, messageId, publishTime}, subscription}` (depth 3, and Pub/Sub
 * allows at most 100 attributes).
 */
export const NOTIFICATION_JSON_MAX_DEPTH = 16;
export const NOTIFICATION_JSON_MAX_ENTRIES = 512;

export type JsonShapeLimits = { maxDepth: number; maxEntries: number };

/** Incremental scan of JSON text: nesting depth and the number of `,`-separated entries outside strings. */
export class JsonShapeScanner {
  private inString = false;
  private escaped = false;
  private depth = 0;
  private entries = 0;

  constructor(private readonly limits: JsonShapeLimits) {}

  /** Why the bytes so far exceed the limits, or undefined while they do not. */
  push(chunk: Uint8Array): string | undefined {
    const { maxDepth, maxEntries } = this.limits;
    for (let i = 0; i < chunk.length; i++) {
      const c = chunk[i];
      if (this.inString) {
        if (this.escaped) this.escaped = false;
        else if (c === 0x5c /* \ */) this.escaped = true;
        else if (c === 0x22 /* " */) this.inString = false;
      } else if (c === 0x22) {
        this.inString = true;
      } else if (c === 0x7b /* { */ || c === 0x5b /* [ */) {
        if (++this.depth > maxDepth) return `the body nests deeper than ${maxDepth} levels`;
      } else if (c === 0x7d /* } */ || c === 0x5d /* ] */) {
        this.depth--;
      } else if (c === 0x2c /* , */) {
        if (++this.entries >= maxEntries) return `the body holds more than ${maxEntries} entries`;
      }
    }
    return undefined;
  }
}

/**
 * The request body passed through a JsonShapeScanner (a Fastify preParsing stream): the first chunk
 * past the limits fails the body with `refuse(reason)`, and nothing after it is read.
 */
export function guardJsonShape(payload: Readable, limits: JsonShapeLimits, refuse: (reason: string) => Error): Transform {
  const scanner = new JsonShapeScanner(limits);
  const guard = new Transform({
    transform(chunk: Buffer, _encoding, callback) {
      const why = scanner.push(chunk);
      if (why) callback(refuse(why));
      else callback(null, chunk);
    },
  });
  // pipe() does not pass a source error on: a client that goes away mid-body must still end the read.
  payload.on('error', (error) => guard.destroy(error));
  return payload.pipe(guard);
}
