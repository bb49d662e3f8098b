import type { FromSchema } from "json-schema-to-ts";
import { LOCALES } from "@emailsvc/text";
import { body, bodyErrors, errors, json, noContent, page, param, pathParam, ref, serviceErrors, timestamp } from "../../openapi/kit.js";
import type { JsonSchema, ParameterObject, Paths } from "../../openapi/types.js";

// Signup forms' part of the OpenAPI document: an account's forms, kept by the
// portal, whose page server takes their posts. The rules a value breaks that
// the document cannot say (public tags, origins) come back as 400
// `validation_failed` with the field named.

const tagList = (description: string) =>
  ({ type: "array", maxItems: 20, uniqueItems: true, items: { type: "string", minLength: 1, maxLength: 100 }, description }) as const;

const field = {
  type: "object",
  additionalProperties: false,
  required: ["name", "label", "type"],
  properties: {
    name: { type: "string", pattern: "^[a-z][a-z0-9_]{0,39}$", description: "The metadata key the value is stored under (not `email`, `locale`, `tags`, `pow`, `website`, `lang`)." },
    label: { type: "string", minLength: 1, maxLength: 100, description: "What the person reads beside the field." },
    type: { type: "string", enum: ["text", "number", "boolean"], description: "`text` (at most 500 characters), `number`, or `boolean` (a checkbox)." },
    required: { type: "boolean", default: false },
  },
} as const;

const redirectUrl = (what: string) =>
  ({
    type: "string",
    maxLength: 2000,
    description: `${what} An https URL (http only for localhost); "" for the portal's own page.`,
  }) as const;

const settingsProperties = {
  name: { type: "string", minLength: 1, maxLength: 100, description: "For you; never shown to the person." },
  tags: tagList("Public tags everyone who signs up gets (tag names)."),
  optional_tags: tagList("Public tags the person may choose (checkboxes; tag names)."),
  ask_locale: { type: "boolean", description: `Whether the form asks for the person's language (${LOCALES.join(", ")}).` },
  fields: { type: "array", maxItems: 10, items: field, description: "Metadata fields the form asks for." },
  success_url: redirectUrl("Where the browser goes after an accepted signup."),
  error_url: redirectUrl("Where the browser goes after a refused one, with `?error=<code>` (and `&field=<name>`)."),
  allowed_origins: {
    type: "array",
    minItems: 1,
    maxItems: 20,
    uniqueItems: true,
    items: { type: "string", minLength: 1, maxLength: 300, examples: ["https://www.example.com"] },
    description:
      "The exact origins (`https://host[:port]`; http only for localhost) whose pages may post to the form. At least one: a post from any other origin (by its `Origin`, else `Referer`) is refused with 403 and changes nothing, so no other site can sign its visitors up to your lists.",
  },
  consent_text: { type: "string", maxLength: 2000, description: "The consent wording the form shows, recorded with each signup." },
  consent_version: { type: "string", maxLength: 100, description: "A version label of the wording, recorded with each signup. Give the text, the version or both." },
} as const;

export const FormCreate = {
  type: "object",
  additionalProperties: false,
  required: ["name", "allowed_origins"],
  properties: {
    ...settingsProperties,
    tags: { ...settingsProperties.tags, default: [] },
    optional_tags: { ...settingsProperties.optional_tags, default: [] },
    ask_locale: { ...settingsProperties.ask_locale, default: false },
    fields: { ...settingsProperties.fields, default: [] },
    success_url: { ...settingsProperties.success_url, default: "" },
    error_url: { ...settingsProperties.error_url, default: "" },
    consent_text: { ...settingsProperties.consent_text, default: "" },
    consent_version: { ...settingsProperties.consent_version, default: "" },
  },
} as const;
export type FormCreateBody = FromSchema<typeof FormCreate>;

export const FormUpdate = {
  type: "object",
  additionalProperties: false,
  minProperties: 1,
  description: "Any of the fields; fields left out keep their value. A list given replaces the list.",
  properties: settingsProperties,
} as const;
export type FormUpdateBody = FromSchema<typeof FormUpdate>;

export const schemas: Record<string, JsonSchema> = {
  FormCreate,
  FormUpdate,
  SignupForm: {
    type: "object",
    additionalProperties: false,
    required: [
      "id",
      "name",
      "tags",
      "optional_tags",
      "ask_locale",
      "fields",
      "success_url",
      "error_url",
      "allowed_origins",
      "consent_text",
      "consent_version",
      "action_url",
      "snippet",
      "created_at",
      "updated_at",
    ],
    properties: {
      id: { type: "string", readOnly: true, description: "`frm_` and 26 random characters: public (in your HTML) and not guessable.", examples: ["frm_5k2m9x0qj3r7t1v8w4y6z2a0bc"] },
      ...settingsProperties,
      success_url: { type: "string" },
      error_url: { type: "string" },
      consent_text: { type: "string" },
      consent_version: { type: "string" },
      action_url: { type: "string", format: "uri", description: "Where the form posts: `{PREFERENCES_URL}/subscribe/{id}`." },
      snippet: {
        type: "string",
        description:
          "HTML to paste into your page: a plain `<form method=\"post\">` with labelled fields, the consent wording and a honeypot; it works without JavaScript (a post without a proof of work is answered with the portal's check page, which does it in the browser and posts again). A commented-out script tag does the check on your page instead.",
      },
      created_at: timestamp("When the form was created (RFC 3339, UTC)."),
      updated_at: timestamp("When the form last changed (RFC 3339, UTC)."),
    },
  },
  SignupFormPage: page("SignupForm", "A page of forms, in id order (ids are random, so not the order of creation)."),
};

export const parameters: Record<string, ParameterObject> = {
  FormId: pathParam("id", "The form's id."),
};

export const paths: Paths = {
  "/api/v1/forms": {
    post: {
      operationId: "createForm",
      summary: "Create a signup form",
      description:
        "A public signup form of this account and mode: people post to `action_url` from your pages (`allowed_origins`), and each accepted post becomes a signup (`pending` with a confirmation mail when the account has double opt-in, else `active`), with the consent wording and the person's IP and user agent recorded. At most 100 forms per account and mode (409 `form_limit_reached`).",
      tags: ["Signup forms"],
      requestBody: body("FormCreate"),
      responses: { "201": json(ref("SignupForm"), "The new form, with its snippet."), ...errors(...bodyErrors, "Conflict", ...serviceErrors) },
    },
    get: {
      operationId: "listForms",
      summary: "List signup forms",
      tags: ["Signup forms"],
      parameters: [param("Limit"), param("Cursor")],
      responses: { "200": json(ref("SignupFormPage"), "A page of forms."), ...errors("BadRequest", ...serviceErrors) },
    },
  },
  "/api/v1/forms/{id}": {
    get: {
      operationId: "getForm",
      summary: "Get a signup form and its snippet",
      tags: ["Signup forms"],
      parameters: [param("FormId")],
      responses: { "200": json(ref("SignupForm"), "The form."), ...errors("NotFound", ...serviceErrors) },
    },
    patch: {
      operationId: "updateForm",
      summary: "Change a signup form",
      description: "Posts use the new settings at once on the replica that took the change, on the others within 30 seconds.",
      tags: ["Signup forms"],
      parameters: [param("FormId")],
      requestBody: body("FormUpdate"),
      responses: { "200": json(ref("SignupForm"), "The changed form."), ...errors(...bodyErrors, "NotFound", ...serviceErrors) },
    },
    delete: {
      operationId: "deleteForm",
      summary: "Delete a signup form",
      description: "Posts to it are refused (404) from then on; the subscribers it brought stay.",
      tags: ["Signup forms"],
      parameters: [param("FormId")],
      responses: { "204": noContent("Deleted."), ...errors("NotFound", ...serviceErrors) },
    },
  },
};
