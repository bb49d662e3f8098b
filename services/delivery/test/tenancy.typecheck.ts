// Compiled by `npm test`'s type check of the tests (tsconfig.tests.json),
// never run by Jest: it shows what the types forbid. Each `@ts-expect-error`
// fails the type check the day the line below it compiles, so a use case that
// could reach a collection without its tenant would break the build.

import type { Scope as SubscriberScope } from "../../subscribers/src/usecases/deps.js";
import type { DeliveryDeps } from "../src/usecases/deliver-email.js";
import type { Deps, Scope } from "../src/usecases/deps.js";
import { getEmail } from "../src/usecases/get-email.js";

declare const deps: Deps;
declare const consumerDeps: DeliveryDeps;
declare const scope: Scope;
declare const subscriberScope: SubscriberScope;

export function aUseCaseCannotQueryWithoutTheTenant(): void {
  // @ts-expect-error request-side deps hold no collection: data only through a Scope
  void deps.emails;
  // @ts-expect-error the consumer's deps hold no collection either
  void consumerDeps.sandbox;
  // @ts-expect-error a Scope is the tenant's collections; a call context alone is not one
  void getEmail({ call: scope.call }, "eml_x");
  // @ts-expect-error a tenant's collection cannot be asked about another tenant
  void scope.emails.find({ tenant: "acc_other:live" });
  // @ts-expect-error nor can an update move a document to another tenant
  void scope.emails.updateOne({ _id: "eml_x" }, { $set: { tenant: "acc_other:live" } });
}

export function filtersAndUpdatesAreTypedByTheDocument(): void {
  // @ts-expect-error a filter names the document's own fields only
  void scope.emails.find({ no_such_field: 1 });
  // @ts-expect-error with values of the field's type
  void scope.emails.find({ status: "lost" });
  // @ts-expect-error an update names the document's own fields only
  void scope.emails.updateOne({ _id: "eml_x" }, { $set: { statuss: "sent" } });
  // @ts-expect-error $inc takes number fields only
  void scope.emails.updateOne({ _id: "eml_x" }, { $inc: { status: 1 } });
  // @ts-expect-error a dotted path only inside an object field
  void subscriberScope.subscribers.find({ "email.domain": "x" });

  // What use cases do write compiles: fields, operators, dotted paths inside object fields.
  void scope.emails.find({ status: "queued", lease_until: { $lt: 1 }, _id: { $in: ["eml_a"] } });
  void subscriberScope.subscribers.find({ "metadata.plan": "pro", tag_ids: "tag_x" });
  void scope.emails.updateOne({ _id: "eml_x" }, { $set: { status: "sent" }, $inc: { attempts: 1 } });
}
