/**
 * Orders strings by their UTF-8 bytes, as PostgreSQL's "C" collation and the event contract's tie
 * rules do (JavaScript's `<` compares UTF-16 code units, which differs above U+FFFF).
 */
export const byteOrder = (a: string, b: string): number => Buffer.compare(Buffer.from(a), Buffer.from(b));
