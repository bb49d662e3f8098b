import type { Tag } from "@emailsvc/proto";
import { rfc3339 } from "../../routes/json.js";

// Proto Tag -> the REST API's JSON.

export interface TagJson {
  id: string;
  name: string;
  description: string;
  is_public: boolean;
  translations: Record<string, { name: string; description: string }>;
  subscriber_count: number;
  created_at: string;
  updated_at: string;
}

export function tagJson(t: Tag | undefined): TagJson {
  if (!t) throw new Error("the service returned no tag");
  return {
    id: t.id,
    name: t.name,
    description: t.description,
    is_public: t.isPublic,
    translations: translationsJson(t.translations),
    subscriber_count: Number(t.subscriberCount),
    created_at: rfc3339(t.createdAt, "created_at"),
    updated_at: rfc3339(t.updatedAt, "updated_at"),
  };
}

/** Translations by locale, as the API shows them (a tag's, or a portal tag's). */
export function translationsJson(translations: Tag["translations"]): Record<string, { name: string; description: string }> {
  return Object.fromEntries(Object.entries(translations).map(([locale, t]) => [locale, { name: t.name, description: t.description }]));
}
