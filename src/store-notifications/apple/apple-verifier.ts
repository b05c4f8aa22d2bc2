import type { KeyObject, X509Certificate } from 'node:crypto';
import { Environment, SignedDataVerifier } from '@apple/app-store-server-library';
import type { AppleApp } from '../../config/app-config.js';

/**
 * How far back a payload's signedDate may be and still be the instant its chain is checked at. The
 * App Store retries a V2 notification five times, 1, 12, 24, 48 and 72 hours after the previous
 * attempt (157 h in all), resending what it signed the first time; a week covers that.
 */
export const SIGNED_DATE_WINDOW_MS = 7 * 86_400_000;
/** A signedDate this far ahead of our clock is still taken as the signing instant (clock skew). */
export const SIGNED_DATE_MAX_SKEW_MS = 60_000;

/**
 * The instant certificate validity is checked at: the payload's signedDate while it lies within the
 * window before now (so a retry signed just before a certificate expired still verifies), otherwise
 * now. A payload therefore never picks the instant: not by claiming a date years back, when an
 * expired chain was valid, nor by a date outside what a Date can hold, at which Apple's library
 * compares against NaN and so passes every certificate.
 */
export function chainCheckInstant(signedAt: number, now: number): number {
  return Number.isFinite(signedAt) && signedAt >= now - SIGNED_DATE_WINDOW_MS && signedAt <= now + SIGNED_DATE_MAX_SKEW_MS ? signedAt : now;
}

/**
 * Apple's SignedDataVerifier, offline (no network at run time: no OCSP), checking certificate
 * validity at chainCheckInstant instead of at whatever signedDate the payload carries.
 */
export class AppleVerifier extends SignedDataVerifier {
  constructor(
    roots: Buffer[],
    environment: Environment,
    bundleId: string,
    appAppleId: number | undefined,
    private readonly now: () => number,
  ) {
    super(roots, false, environment, bundleId, appAppleId);
  }

  protected override verifyCertificateChain(
    trustedRoots: X509Certificate[],
    leaf: X509Certificate,
    intermediate: X509Certificate,
    effectiveDate: Date,
  ): Promise<KeyObject> {
    return super.verifyCertificateChain(trustedRoots, leaf, intermediate, new Date(chainCheckInstant(effectiveDate.getTime(), this.now())));
  }
}

/** The verifier of one configured app: its bundle id, environment and (Production) app Apple id, against the configured roots. */
export function appleVerifierFor(rootCertificates: readonly Buffer[], app: AppleApp, now: () => number): AppleVerifier {
  const environment = app.environment === 'Production' ? Environment.PRODUCTION : Environment.SANDBOX;
  return new AppleVerifier([...rootCertificates], environment, app.bundleId, app.appAppleId, now);
}
