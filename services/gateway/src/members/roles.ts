import type { HttpMethod } from "../openapi/types.js";

// Who among an account's members may do what, for every operation a member
// reaches with a session. One table: the role an operation needs, by its
// operationId, where it differs from the default of its method (reads need
// a viewer, every other method an admin). API keys are not members: they
// keep full access to the operations they take (test/roles.test.ts walks the
// document, so no operation goes without a rule).

/** The roles, least to most: each may do what the ones before it may. */
export const ROLES = ["viewer", "developer", "admin", "owner"] as const;
export type Role = (typeof ROLES)[number];

export function roleAtLeast(role: Role, needed: Role): boolean {
  return ROLES.indexOf(role) >= ROLES.indexOf(needed);
}

/**
 * POSTs that only read (a render, a count; the dashboard makes them as its
 * member types): a viewer may make them, and they are not changes, so the
 * audit log does not record them (audit.ts).
 */
export const READS_BY_POST: ReadonlySet<string> = new Set(["previewTemplate", "previewTemplateDraft", "countRecipientsOfFilter"]);

/**
 * Operations whose role is not their method's default. A developer builds
 * the integration: API keys, webhooks, templates, sending domains and sends;
 * an admin runs the audience and its mail (subscribers, tags, campaigns,
 * triggers, suppressions, forms, settings) and the people; some POSTs only
 * read, and a viewer may make them.
 */
export const ROLE_RULES: Readonly<Record<string, Role>> = {
  // Reads that are POSTs: nothing changes.
  ...Object.fromEntries([...READS_BY_POST].map((id): [string, Role] => [id, "viewer"])),
  // A member's own session.
  deleteSession: "viewer",
  deleteAllSessions: "viewer",
  // A member's own passkeys.
  createPasskeyRegistrationOptions: "viewer",
  createPasskey: "viewer",
  deletePasskey: "viewer",
  // The developer's part.
  createTemplate: "developer",
  updateTemplate: "developer",
  deleteTemplate: "developer",
  sendEmail: "developer",
  sendEmailBatch: "developer",
  createSenderDomain: "developer",
  deleteSenderDomain: "developer",
  verifySenderDomain: "developer",
  createWebhook: "developer",
  updateWebhook: "developer",
  deleteWebhook: "developer",
  rotateWebhookSecret: "developer",
  replayWebhookDelivery: "developer",
  createKey: "developer",
  revokeKey: "developer",
  // Reads only an admin may make: who did what, and who is invited.
  listAuditLog: "admin",
  listInvitations: "admin",
};

/** The role an operation needs of a member. */
export function requiredRole(operationId: string, method: HttpMethod): Role {
  return ROLE_RULES[operationId] ?? (method === "get" ? "viewer" : "admin");
}
