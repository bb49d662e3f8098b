// Compile-time proof that the subscribers' use cases cannot query without
// their tenant (checked by `npm test`'s tsc step over tests; Jest does not run
// this file). Every `@ts-expect-error` below must be an error.

import type { CallContext } from "@emailsvc/runtime";
import type { Collection } from "@emailsvc/storage";
import type { SubscriberDoc } from "../src/storage/documents.js";
import type { Deps, Scope } from "../src/usecases/deps.js";
import { getSubscriber } from "../src/usecases/get-subscriber.js";

declare const deps: Deps;
declare const scope: Scope;
declare const subscribers: Collection<SubscriberDoc>;
declare const call: CallContext;

export async function useCases(): Promise<void> {
  await scope.subscribers.find({ deleted: false, "metadata.plan": "pro" });

  // @ts-expect-error a use case's deps hold no collection to query around its scope
  await deps.subscribers.find({});
  // @ts-expect-error a raw collection cannot stand in for a tenant's repository
  await getSubscriber({ ...scope, call, subscribers }, "sub_x");
  // @ts-expect-error a repository adds its own tenant: a filter cannot name another
  await scope.subscribers.find({ tenant: "acc_other:live" });
  // @ts-expect-error a field the subscriber does not have
  await scope.subscribers.find({ emial: "a@example.com" });
  // @ts-expect-error a status the subscriber cannot have
  await scope.subscribers.updateOne({ _id: "sub_x" }, { $set: { status: "gone" } });
}
