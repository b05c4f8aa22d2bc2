// What the store paths read of receipt ownership before publishing (app-links.ts).

export const appLinksSql = {
  /** $1 applications, $2 receipt ids (pairs), $3 the id prefix of the links apps make: each receipt an app's link owns, and for whom. */
  ownedByApps: `
    SELECT r.app_id, r.receipt_id, r.application_username FROM unnest($1::text[], $2::text[]) AS w(app_id, receipt_id)
    JOIN read_model.receipts r ON r.app_id = w.app_id AND r.receipt_id = w.receipt_id
    WHERE r.explicit AND starts_with(r.version_id, $3)`,
};
