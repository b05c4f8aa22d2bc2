/**
 * Why a JWT_SECRET is too weak to guard production, or undefined. Anyone holding the secret mints
 * tokens for every application, so a value copied from an example or typed by hand is refused.
 */
const PLACEHOLDER = /change[-_ ]?me|changeit|replace[-_ ]?(me|this|with)|placeholder|example|your[-_ ]?(own[-_ ]?)?secret|^(secret|password)/i;
// A random 32-character hex secret (128 real bits) estimates at 91+ bits; a word or a pattern far lower.
const MIN_ESTIMATED_BITS = 80;

export function weakSecretReason(secret: string): string | undefined {
  if (PLACEHOLDER.test(secret)) return 'looks like a placeholder from an example';
  if (/^(.+?)\1+$/s.test(secret)) return 'is one short string repeated';
  const bits = estimatedBits(secret);
  if (bits < MIN_ESTIMATED_BITS) return `has about ${Math.floor(bits)} bits of entropy by its character frequencies; at least ${MIN_ESTIMATED_BITS} are needed`;
  return undefined;
}

/** Length times the Shannon entropy of the secret's own character frequencies: an upper bound for a random string. */
function estimatedBits(secret: string): number {
  const chars = [...secret];
  const counts = new Map<string, number>();
  for (const c of chars) counts.set(c, (counts.get(c) ?? 0) + 1);
  let perChar = 0;
  for (const n of counts.values()) perChar -= (n / chars.length) * Math.log2(n / chars.length);
  return perChar * chars.length;
}
