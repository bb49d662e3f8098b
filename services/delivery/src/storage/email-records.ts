import type { Collection, Filter, FilteredUpdate, FindOptions, IndexSpec, InsertManyResult, Update, UpsertManyResult } from "@emailsvc/storage";
import { withEmailDefaults, withoutEmailDefaults, type EmailDoc, type StoredEmailDoc } from "./documents.js";

/**
 * The `emails` collection as every use case sees it: records are stored
 * without the fields that hold their defaults (documents.ts, EMAIL_DEFAULTS),
 * and read whole. The one place that knows: inserts leave those fields out,
 * and every document read (find, findOne, updateOne's answer) gets them back.
 * Filters and updates pass as they are; an update that sets a defaulted field
 * to a value stores it (a sent email's message_id, a failed one's error).
 */
export class EmailRecords implements Collection<EmailDoc> {
  constructor(private readonly stored: Collection<StoredEmailDoc>) {}

  createIndexes(specs: readonly IndexSpec[]): Promise<void> {
    return this.stored.createIndexes(specs);
  }
  insertOne(doc: EmailDoc): Promise<void> {
    return this.stored.insertOne(withoutEmailDefaults(doc));
  }
  insertMany(docs: readonly EmailDoc[]): Promise<InsertManyResult> {
    return this.stored.insertMany(docs.map(withoutEmailDefaults));
  }
  async findOne(filter: Filter<EmailDoc>): Promise<EmailDoc | null> {
    const doc = await this.stored.findOne(filter as Filter<StoredEmailDoc>);
    return doc === null ? null : withEmailDefaults(doc);
  }
  async find(filter: Filter<EmailDoc>, options?: FindOptions): Promise<EmailDoc[]> {
    return (await this.stored.find(filter as Filter<StoredEmailDoc>, options)).map(withEmailDefaults);
  }
  count(filter: Filter<EmailDoc>): Promise<number> {
    return this.stored.count(filter as Filter<StoredEmailDoc>);
  }
  countBy(filter: Filter<EmailDoc>, field: string): Promise<Map<string, number>> {
    return this.stored.countBy(filter as Filter<StoredEmailDoc>, field);
  }
  async updateOne(filter: Filter<EmailDoc>, update: Update<EmailDoc>): Promise<EmailDoc | null> {
    const doc = await this.stored.updateOne(filter as Filter<StoredEmailDoc>, update as Update<StoredEmailDoc>);
    return doc === null ? null : withEmailDefaults(doc);
  }
  updateMany(filter: Filter<EmailDoc>, update: Update<EmailDoc>): Promise<number> {
    return this.stored.updateMany(filter as Filter<StoredEmailDoc>, update as Update<StoredEmailDoc>);
  }
  updateEach(updates: ReadonlyArray<FilteredUpdate<EmailDoc>>): Promise<number[]> {
    return this.stored.updateEach(updates as ReadonlyArray<FilteredUpdate<StoredEmailDoc>>);
  }
  upsertMany(docs: readonly EmailDoc[], scope?: Filter<EmailDoc>): Promise<UpsertManyResult> {
    // Sets the fields given (absent ones stay as they are): a default left out here leaves a stored value alone,
    // so the defaults are written as given.
    return this.stored.upsertMany(docs, scope as Filter<StoredEmailDoc> | undefined);
  }
  deleteOne(filter: Filter<EmailDoc>): Promise<boolean> {
    return this.stored.deleteOne(filter as Filter<StoredEmailDoc>);
  }
  deleteMany(filter: Filter<EmailDoc>): Promise<number> {
    return this.stored.deleteMany(filter as Filter<StoredEmailDoc>);
  }
  compact(): Promise<void> {
    return this.stored.compact();
  }
}
