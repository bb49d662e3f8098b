import { newId } from "@emailsvc/ids";
import { DuplicateKeyError } from "@emailsvc/storage";
import { tagKey } from "../domain/tag.js";
import type { TagDoc } from "../storage/documents.js";
import type { Deps, Scope } from "./deps.js";

/**
 * Returns the tags with these names, creating the missing ones (the spec:
 * unknown tag names are created). Two requests creating one name at once both
 * end up with the same tag: the unique index picks the winner, the loser reads it.
 */
export async function ensureTags(deps: Deps, scope: Scope, names: string[]): Promise<TagDoc[]> {
  if (names.length === 0) return [];
  const keys = names.map(tagKey);
  const found = new Map((await scope.tags.find({ name_key: { $in: keys } })).map((t) => [t.name_key, t]));
  const result: TagDoc[] = [];
  for (const name of names) {
    const key = tagKey(name);
    let tag = found.get(key);
    if (!tag) {
      const now = deps.now();
      const doc = {
        _id: newId("tag"),
        name,
        name_key: key,
        description: "",
        is_public: false,
        created_at: now,
        updated_at: now,
      };
      try {
        await scope.tags.insertOne(doc);
        tag = { ...doc, tenant: scope.tags.tenant };
      } catch (err) {
        if (!(err instanceof DuplicateKeyError)) throw err;
        tag = (await scope.tags.findOne({ name_key: key })) ?? undefined;
        if (!tag) throw err;
      }
    }
    result.push(tag);
  }
  return result;
}
