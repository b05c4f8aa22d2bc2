// Where a transaction row's current state came from (docs/api.md, "Provenance"): the CloudEvents
// `source` of the event whose snapshot the row shows. The service's own producers use these
// sources; any other source is an upstream producer's.

export const SOURCES = {
  appleNotifications: 'apple-app-store-server-notifications',
  googleNotifications: 'google-play-rtdn',
  stripeWebhooks: 'stripe-webhooks',
  appleImport: 'apple-app-store-server-api',
  googleImport: 'google-play-developer-api',
  stripeImport: 'stripe-api',
  googleVoidedPoll: 'google-play-voided-purchases',
  appPurchases: 'subscription-records-purchases',
  reconciliation: 'subscription-records-reconciliation',
} as const;

export type ProvenanceKind = 'store-notification' | 'import' | 'app-purchase' | 'reconciliation' | 'producer';

const KINDS: ReadonlyMap<string, ProvenanceKind> = new Map([
  [SOURCES.appleNotifications, 'store-notification'],
  [SOURCES.googleNotifications, 'store-notification'],
  [SOURCES.stripeWebhooks, 'store-notification'],
  // the Voided Purchases API polled on a schedule: Google's feed of refunds, as RTDNs are of the rest
  [SOURCES.googleVoidedPoll, 'store-notification'],
  [SOURCES.appleImport, 'import'],
  [SOURCES.googleImport, 'import'],
  [SOURCES.stripeImport, 'import'],
  [SOURCES.appPurchases, 'app-purchase'],
  [SOURCES.reconciliation, 'reconciliation'],
]);

export const provenanceKind = (source: string): ProvenanceKind => KINDS.get(source) ?? 'producer';

/** The events a store's mapping built, as published by another path of the service (one mapping per store, several sources). */
export const fromSource = <E extends object>(events: readonly E[], source: string): E[] => events.map((e) => ({ ...e, source }));

export type Provenance = { kind: ProvenanceKind; source: string; eventId: string; receivedAt?: Date };

/** A row's provenance as shown: the kind of path, the event's source and id, and when the log received it (unknown for events older than the field). */
export function provenanceOf(source: string, eventId: string, receivedAt: Date | null): Provenance {
  const p: Provenance = { kind: provenanceKind(source), source, eventId };
  if (receivedAt !== null) p.receivedAt = receivedAt;
  return p;
}
