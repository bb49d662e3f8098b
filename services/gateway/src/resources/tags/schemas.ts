import type { FromSchema } from "json-schema-to-ts";
import { visibleTextRule } from "@emailsvc/text";
import { bodyErrors, body, errors, json, lineText, noContent, page, param, pathParam, ref, serviceErrors, timestamp } from "../../openapi/kit.js";
import type { JsonSchema, ParameterObject, Paths } from "../../openapi/types.js";

// Tags' part of the OpenAPI document; body types are derived from the schemas.

/**
 * A tag name as the subscribers service takes it (domain/tag.ts): 1-100
 * characters, not blank, no control characters or "/" (names appear in URL
 * paths), unique per account and mode ignoring case.
 */
export const tagName = {
  ...lineText(100, 'is 1-100 characters, not blank, without control characters or "/"', "/"),
  description: 'A tag name: 1-100 characters, not blank, without control characters or "/"; unique per account and mode ignoring case.',
} as const;

const tagDescription = { type: "string", maxLength: 500 } as const;

/** A tag's name and description in one language, as subscribers read them. */
const tagTranslation = {
  type: "object",
  additionalProperties: false,
  required: ["name"],
  properties: {
    name: {
      ...lineText(100, visibleTextRule(100)),
      description: "The name in this language: 1-100 characters with visible text, no control characters.",
    },
    description: { ...tagDescription, default: "", description: "The description in this language; empty: the tag's own." },
  },
} as const;

/**
 * Translations by language, one entry per language the portal speaks
 * (@emailsvc/text's LOCALES: the test of the document holds the keys to
 * that list). The portal page and the preference-center API show the entry
 * of the subscriber's language, else `name` and `description`.
 */
export const translations = {
  type: "object",
  additionalProperties: false,
  properties: { en: tagTranslation, de: tagTranslation, fr: tagTranslation, it: tagTranslation },
  description:
    'The tag\'s name and description in the languages subscribers read (`en`, `de`, `fr`, `it`), e.g. `{"de": {"name": "Neuigkeiten", "description": "Jede Woche"}}`. The preference page shows the one of its language, else `name` and `description`; `name` stays the tag\'s identity in the API.',
} as const;

export const TagCreate = {
  type: "object",
  additionalProperties: false,
  required: ["name"],
  properties: {
    name: tagName,
    description: { ...tagDescription, default: "" },
    is_public: { type: "boolean", default: false },
    translations: { ...translations, default: {} },
  },
} as const;
/** Defaults (description "", is_public false) are filled in by validation, so they are always present. */
export type TagCreateBody = FromSchema<typeof TagCreate>;

export const TagUpdate = {
  type: "object",
  additionalProperties: false,
  minProperties: 1,
  description: "Any of the fields; fields left out keep their value.",
  properties: {
    name: tagName,
    description: tagDescription,
    is_public: { type: "boolean" },
    translations: { ...translations, description: `${translations.description} Replaces every translation; \`{}\` removes them.` },
  },
} as const;
export type TagUpdateBody = FromSchema<typeof TagUpdate>;

export const schemas: Record<string, JsonSchema> = {
  Tag: {
    type: "object",
    additionalProperties: false,
    required: ["id", "name", "description", "is_public", "translations", "subscriber_count", "created_at", "updated_at"],
    properties: {
      id: { type: "string", readOnly: true, examples: ["tag_01jd3x0k8m7y6t5r4q3p2n1m0k"] },
      name: { type: "string", description: "Unique per account and mode; identifies the tag in subscriber tag operations." },
      description: { type: "string" },
      is_public: { type: "boolean", description: "Public tags can be browsed and joined by subscribers in the preference portal." },
      translations,
      subscriber_count: { type: "integer", minimum: 0, readOnly: true, description: "Subscribers holding the tag, whatever their status (0 on a new tag)." },
      created_at: timestamp("When the tag was created (RFC 3339, UTC)."),
      updated_at: timestamp("When the tag last changed (RFC 3339, UTC)."),
    },
  },
  TagCreate,
  TagUpdate,
  TagPage: page("Tag", "A page of tags, oldest first."),
};

export const parameters: Record<string, ParameterObject> = {
  TagId: pathParam("id", "The tag's id."),
};

export const paths: Paths = {
  "/api/v1/tags": {
    post: {
      operationId: "createTag",
      summary: "Create a tag",
      tags: ["Tags"],
      requestBody: body("TagCreate"),
      responses: { "201": json(ref("Tag"), "The new tag."), ...errors(...bodyErrors, "Conflict", ...serviceErrors) },
    },
    get: {
      operationId: "listTags",
      summary: "List tags",
      tags: ["Tags"],
      parameters: [param("Limit"), param("Cursor")],
      responses: { "200": json(ref("TagPage"), "A page of tags."), ...errors("BadRequest", ...serviceErrors) },
    },
  },
  "/api/v1/tags/{id}": {
    get: {
      operationId: "getTag",
      summary: "Get a tag",
      tags: ["Tags"],
      parameters: [param("TagId")],
      responses: { "200": json(ref("Tag"), "The tag."), ...errors("NotFound", ...serviceErrors) },
    },
    patch: {
      operationId: "updateTag",
      summary: "Update a tag",
      tags: ["Tags"],
      parameters: [param("TagId")],
      requestBody: body("TagUpdate"),
      responses: {
        "200": json(ref("Tag"), "The updated tag."),
        ...errors(...bodyErrors, "NotFound", "Conflict", ...serviceErrors),
      },
    },
    delete: {
      operationId: "deleteTag",
      summary: "Delete a tag",
      description: "Also removes the tag from every subscriber.",
      tags: ["Tags"],
      parameters: [param("TagId")],
      responses: { "204": noContent("Deleted."), ...errors("NotFound", ...serviceErrors) },
    },
  },
};
