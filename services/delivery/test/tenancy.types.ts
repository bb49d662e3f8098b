// Compile-time proof that delivery's use cases and its consumer cannot query
// without their tenant (checked by `npm test`'s tsc step over tests; Jest does
// one ever compile, tsc fails on the unused directive.

import type { CallContext } from "@emailsvc/runtime";
import type { Collection } from "@emailsvc/storage";
import type { RepositoriesOfEvent } from "../src/messaging/send-consumer.js";
import type { EmailDoc, SandboxMessageDoc } from "../src/storage/documents.js";
import type { Repositories } from "../src/storage/repositories.js";
import type { DeliveryDeps } from "../src/usecases/deliver-email.js";
import type { Deps, Scope } from "../src/usecases/deps.js";
import type { ErasureDeps } from "../src/usecases/erase-subscriber.js";
import { getEmail } from "../src/usecases/get-email.js";
import { listEmails } from "../src/usecases/list-emails.js";

declare const deps: Deps;
declare const consumerDeps: DeliveryDeps & ErasureDeps;
declare const scope: Scope;
declare const repos: Repositories;
declare const emails: Collection<EmailDoc>;
declare const sandbox: Collection<SandboxMessageDoc>;
declare const call: CallContext;
declare const ofEvent: RepositoriesOfEvent;

export async function useCases(): Promise<void> {
  // What a use case may do: read and write its own tenant's emails.
  await scope.emails.find({ status: "queued" });
  await getEmail(scope, "eml_x");

  // @ts-expect-error a use case's deps hold no collection to query around its scope
  await deps.emails.find({});
  // @ts-expect-error nor do the consumer's
  await consumerDeps.emails.find({});
  // @ts-expect-error a raw collection cannot stand in for a tenant's repository
  await getEmail({ call, tenant: "acc_x:live", emails, sandbox }, "eml_x");
  // @ts-expect-error nor be slipped into a scope
  await listEmails({ ...scope, emails }, { limit: 10, cursor: "" });
  // @ts-expect-error a repository adds its own tenant: a filter cannot name another
  await scope.emails.find({ tenant: "acc_other:live" });
  // @ts-expect-error an update cannot move an email to another tenant
  await repos.emails.updateOne({ _id: "eml_x" }, { $set: { tenant: "acc_other:live" } });
  // @ts-expect-error a field the email does not have
  await scope.emails.find({ recipient: "a@example.com" });
  // @ts-expect-error the consumer opens a tenant's repositories from a checked event meta only, not from a string
  ofEvent("acc_other:live");
}
