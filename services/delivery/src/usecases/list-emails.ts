import type { TenantFilter } from "@emailsvc/storage";
import type { EmailDoc } from "../storage/documents.js";
import { pageById } from "@emailsvc/ids";
import type { EmailView } from "../domain/email.js";
import { emailView, type Scope } from "./deps.js";

export interface Page<T> {
  items: T[];
  nextCursor: string;
}

/** The tenant's emails, newest first, `limit` at a time; one extra row tells whether a next page exists. */
export async function listEmails(scope: Scope, input: { limit: number; cursor: string }): Promise<Page<EmailView>> {
  const page = await pageById(input, { idPrefix: "eml", filterKey: "newest", newestFirst: true }, ({ range, options }) =>
    scope.emails.find(range as TenantFilter<EmailDoc>, options),
  );
  return { items: page.docs.map(emailView), nextCursor: page.nextCursor };
}
