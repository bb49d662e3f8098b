import { newId } from "@emailsvc/ids";
import type { PrivacyRequestKind } from "../storage/documents.js";
import type { Deps, Scope } from "./deps.js";

/**
 * Who asked, as the log keeps it: `subscriber` for the subscriber themself
 * (through the preference portal: source or actor `portal`), else the call's
 * actor (`api_key:<key id>`, `admin`, …). Never the subscriber's id.
 */
export function requestedBy(scope: Scope): string {
  return scope.origin?.source === "portal" || scope.call.actor === "portal" ? "subscriber" : scope.call.actor;
}

/**
 * Writes one record of the privacy request log (storage/documents.ts,
 * PrivacyRequestDoc): who, when, how and the outcome; `done` says whether the
 * request is finished with it. Returns the record's id.
 */
export async function logPrivacyRequest(
  deps: Deps,
  scope: Scope,
  kind: PrivacyRequestKind,
  outcome: string,
  done: boolean,
): Promise<string> {
  const now = deps.now();
  const id = newId("prq");
  await scope.privacyRequests.insertOne({
    _id: id,
    kind,
    requested_by: requestedBy(scope),
    source: scope.origin?.source ?? "",
    requested_at: now,
    outcome,
    completed_at: done ? now : null,
  });
  return id;
}
