import { AppError, notFound } from "@emailsvc/errors";
import { newId, pageById } from "@emailsvc/ids";
import { withOutbox } from "@emailsvc/outbox";
import { DuplicateKeyError, type TenantFilter } from "@emailsvc/storage";
import { tagKey, validateDescription, validateTagName, validateTranslations, type TagView } from "../domain/tag.js";
import type { OutboxEntry, SubscriberDoc, TagDoc } from "../storage/documents.js";
import { outboxEntry, tagView, type Deps, type Scope } from "./deps.js";
import type { Page } from "./list-subscribers.js";

function nameTaken(existingId: string | undefined): AppError {
  return new AppError("conflict", "tag_name_taken", "a tag with this name already exists", {
    ...(existingId ? { existingId } : {}),
    fieldViolations: [{ field: "name", description: "is already taken" }],
  });
}

export async function createTag(
  deps: Deps,
  scope: Scope,
  input: { name: unknown; description: string; isPublic: boolean; translations?: Record<string, { name: string; description: string }> },
): Promise<TagView> {
  const name = validateTagName(input.name);
  const description = validateDescription(input.description);
  const translations = validateTranslations(input.translations ?? {});
  const now = deps.now();
  const doc = {
    _id: newId("tag"),
    name,
    name_key: tagKey(name),
    description,
    is_public: input.isPublic,
    translations: translations as Record<string, { name: string; description: string }>,
    created_at: now,
    updated_at: now,
  };
  try {
    await scope.tags.insertOne(doc);
  } catch (err) {
    if (err instanceof DuplicateKeyError) throw nameTaken((await scope.tags.findOne({ name_key: doc.name_key }))?._id);
    throw err;
  }
  return tagView({ ...doc, tenant: scope.tags.tenant }, 0);
}

export async function getTag(scope: Scope, id: string): Promise<TagView> {
  const doc = await scope.tags.findOne({ _id: id });
  if (!doc) throw notFound("tag");
  return tagView(doc, await memberCount(scope, doc._id));
}

/**
 * Subscribers holding a tag, counted on the members_of_tag index. A
 * tombstone (an erasure on its way out) is not one.
 */
function memberCount(scope: Scope, tagId: string): Promise<number> {
  return scope.subscribers.count({ tag_ids: tagId, deleted: false });
}

export async function listTags(scope: Scope, input: { limit: number; cursor: string }): Promise<Page<TagView>> {
  const page = await pageById(input, { idPrefix: "tag" }, ({ range, options }) => scope.tags.find(range as TenantFilter<TagDoc>, options));
  // One count per tag of the page, at once (a page holds at most 500).
  const counts = await Promise.all(page.docs.map((doc) => memberCount(scope, doc._id)));
  return { items: page.docs.map((doc, i) => tagView(doc, counts[i]!)), nextCursor: page.nextCursor };
}

export async function updateTag(
  deps: Deps,
  scope: Scope,
  input: {
    id: string;
    name: unknown;
    description: string | undefined;
    isPublic: boolean | undefined;
    /** Replaces every translation when given. */
    translations?: Record<string, { name: string; description: string }> | undefined;
  },
): Promise<TagView> {
  const set: Partial<TagDoc> = {};
  if (input.name !== undefined) {
    const name = validateTagName(input.name);
    set.name = name;
    set.name_key = tagKey(name);
  }
  if (input.description !== undefined) set.description = validateDescription(input.description);
  if (input.isPublic !== undefined) set.is_public = input.isPublic;
  if (input.translations !== undefined) set.translations = validateTranslations(input.translations) as Record<string, { name: string; description: string }>;
  try {
    const doc = await scope.tags.updateOne({ _id: input.id }, { $set: { ...set, updated_at: deps.now() } });
    if (!doc) throw notFound("tag");
    return tagView(doc, await memberCount(scope, doc._id));
  } catch (err) {
    if (err instanceof DuplicateKeyError) throw nameTaken((await scope.tags.findOne({ name_key: set.name_key! }))?._id);
    throw err;
  }
}

/**
 * Deletes a tag and removes it from every subscriber that had it, each removal
 * in that subscriber's audit trail. Members are released first, so a crash
 * halfway leaves the tag in place and the delete can simply be repeated.
 */
export async function deleteTag(deps: Deps, scope: Scope, id: string): Promise<void> {
  const tag = await scope.tags.findOne({ _id: id });
  if (!tag) throw notFound("tag");
  for (;;) {
    const members = await scope.subscribers.find({ tag_ids: id, deleted: false }, { limit: 200 });
    if (members.length === 0) break;
    for (const member of members) {
      const now = deps.now();
      const doc = await scope.subscribers.updateOne(
        { _id: member._id, tag_ids: id },
        withOutbox<SubscriberDoc, OutboxEntry>(
          { $pull: { tag_ids: id } },
          [outboxEntry(scope, now, "subscriber.tag_removed", { tag_id: id, tag: tag.name, reason: "tag_deleted" }, { topic: "subscriber.tag_removed", tag_id: id })],
          now,
        ),
      );
      if (doc) await deps.relay.afterWrite(doc);
    }
  }
  await scope.tags.deleteOne({ _id: id });
}
