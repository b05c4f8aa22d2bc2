/** What the configuration slices (the *.env.ts files) turn environment strings into before they are validated. */

export const toInt = ({ value }: { value: unknown }) => (typeof value === 'string' && /^-?\d+$/.test(value.trim()) ? Number(value) : value);
export const toBool = ({ value }: { value: unknown }) => {
  if (typeof value !== 'string') return value;
  const v = value.trim().toLowerCase();
  return v === 'true' || v === '1' ? true : v === 'false' || v === '0' ? false : value;
};
export const toList = ({ value }: { value: unknown }) =>
  typeof value === 'string'
    ? value
        .split(',')
        .map((s) => s.trim())
        .filter(Boolean)
    : value;

const DURATION = /^(\d{1,9})(ms|s|m|h|d)$/;
const UNIT_MS = { ms: 1, s: 1000, m: 60_000, h: 3_600_000, d: 86_400_000 } as const;
/** "24h", "90m", "30s", "500ms": a unit is required, so a bare number cannot be misread. */
export const toDurationMs = ({ value }: { value: unknown }) => {
  if (typeof value !== 'string') return value;
  const m = DURATION.exec(value.trim());
  return m ? Number(m[1]) * UNIT_MS[m[2] as keyof typeof UNIT_MS] : value;
};
