import type { Tag } from "@emailsvc/proto";
import { rfc3339 } from "../../routes/json.js";

// Proto Tag -> the REST API's JSON.

export interface TagJson {
  id: string;
  name: string;
  description: string;
  is_public: boolean;
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
    created_at: rfc3339(t.createdAt, "created_at"),
    updated_at: rfc3339(t.updatedAt, "updated_at"),
  };
}
