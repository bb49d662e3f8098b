// Compile-time tests of the typed filter and update language (checked by
// `npm test`'s tsc step over tests; Jest does not run this file). Each
// `@ts-expect-error` line must be an error: if it ever compiles, tsc fails on
// the unused directive.

import type { AnyDoc, Collection, Filter, TenantCollection, Update } from "../src/index.js";

interface Entry {
  id: string;
  at: number;
}

interface ThingDoc {
  _id: string;
  tenant: string;
  status: "new" | "done";
  count: number;
  tags: string[];
  metadata: Record<string, string | number | boolean>;
  nested: { inner: { deep: number } };
  sent_at: number | null;
  link?: string;
  outbox: Entry[];
}

declare const things: Collection<ThingDoc>;
declare const scoped: TenantCollection<ThingDoc>;
declare const loose: Collection<AnyDoc>;

export async function allowed(): Promise<void> {
  await things.find({ status: "new", count: { $gt: 2 }, tags: "a", "metadata.plan": "pro", "nested.inner.deep": 3 });
  await things.find({ $or: [{ status: { $in: ["new", "done"] } }, { sent_at: null }], link: { $exists: false } });
  await things.updateOne(
    { _id: "t1" },
    {
      $set: { status: "done", "metadata.plan": "free", sent_at: null },
      $inc: { count: 1 },
      $push: { outbox: { $each: [{ id: "e", at: 1 }] } },
      $pull: { tags: "a" },
      $unset: { link: "" },
    },
  );
  await scoped.find({ status: "done" });
  await loose.find({ whatever: 1, "any.path": { $ne: null }, $or: [{ x: 1 }] });
  await loose.updateOne({ _id: "x" }, { $set: { anything: [1, 2] }, $inc: { n: 1 } });
  const filter: Filter<ThingDoc> = {};
  filter.count = { $lt: 10 };
  const update: Update<ThingDoc> = { $set: { count: 0 } };
  await things.updateOne(filter, update);
}

export async function refused(): Promise<void> {
  // @ts-expect-error a field the document does not have
  await things.find({ stauts: "new" });
  // @ts-expect-error a value of the wrong type
  await things.find({ count: "3" });
  // @ts-expect-error a status the field cannot hold
  await things.find({ status: { $in: ["lost"] } });
  // @ts-expect-error a dotted path into a field that is no object
  await things.find({ "status.x": 1 });
  // @ts-expect-error an unknown path inside a nested object
  await things.find({ "nested.inner.shallow": 1 });
  // @ts-expect-error $set of an unknown field
  await things.updateOne({ _id: "t" }, { $set: { cuont: 1 } });
  // @ts-expect-error $set of a value of the wrong type
  await things.updateOne({ _id: "t" }, { $set: { count: "1" } });
  // @ts-expect-error $inc of a field that is no number
  await things.updateOne({ _id: "t" }, { $inc: { status: 1 } });
  // @ts-expect-error $push of a field that is no array
  await things.updateOne({ _id: "t" }, { $push: { count: { $each: [1] } } });
  // @ts-expect-error $push of elements of the wrong shape
  await things.updateOne({ _id: "t" }, { $push: { outbox: { $each: [{ id: 1 }] } } });
  // @ts-expect-error _id never changes
  await things.updateOne({ _id: "t" }, { $set: { _id: "u" } });
  // @ts-expect-error a tenant's view takes no tenant in its filters: it adds its own
  await scoped.find({ tenant: "acc_other:live" });
  // @ts-expect-error nor can an update move a document to another tenant
  await scoped.updateOne({ _id: "t" }, { $set: { tenant: "acc_other:live" } });
}
