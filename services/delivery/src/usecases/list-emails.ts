import type { TenantFilter } from "@emailsvc/storage";
import type { EmailDoc } from "../storage/documents.js";
import { decodeCursor, encodeCursor, pageLimit } from "@emailsvc/runtime";
import type { EmailView } from "../domain/email.js";
import { emailView, type Scope } from "./deps.js";

export interface Page<T> {
  items: T[];
  nextCursor: string;
}

/** The tenant's emails, newest first, `limit` at a time; one extra row tells whether a next page exists. */
export async function listEmails(scope: Scope, input: { limit: number; cursor: string }): Promise<Page<EmailView>> {
  const limit = pageLimit(input.limit);
  const filter: TenantFilter<EmailDoc> = {};
  if (input.cursor) filter._id = { $lt: decodeCursor(input.cursor, "eml", "newest") };
  const docs = await scope.emails.find(filter, { sort: { _id: -1 }, limit: limit + 1 });
  const page = docs.slice(0, limit);
  const last = page[page.length - 1];
  return {
    items: page.map(emailView),
    nextCursor: docs.length > limit && last ? encodeCursor(last._id, "newest") : "",
  };
}
