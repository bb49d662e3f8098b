import { LOCALES } from "@emailsvc/text";
import { hasVisibleText, trimInvisible } from "@emailsvc/text";
import type { Violation } from "@emailsvc/errors";

// A public signup form as an account configures it, the rules its settings
// follow, and how a post to it becomes a signup. Pure: no I/O.

export type FormFieldType = "text" | "number" | "boolean";

/** A metadata field the form asks for; its value is stored under `name` in the subscriber's metadata. */
export interface FormFieldSpec {
  name: string;
  label: string;
  type: FormFieldType;
  required: boolean;
}

/** What an account sets (create, or the fields an update names). */
export interface FormSettings {
  name: string;
  /** Public tag names everyone who signs up gets. */
  tags: string[];
  /** Public tag names the person may choose among. */
  optionalTags: string[];
  askLocale: boolean;
  fields: FormFieldSpec[];
  /** "" : the portal's own page. */
  successUrl: string;
  errorUrl: string;
  allowedOrigins: string[];
  consentText: string;
  consentVersion: string;
}

export interface SignupFormView extends FormSettings {
  id: string;
  createdAt: number;
  updatedAt: number;
}

export const FORM_LIMITS = {
  name: 100,
  tags: 20,
  fields: 10,
  fieldName: 40,
  label: 100,
  url: 2000,
  origins: 20,
  consentText: 2000,
  consentVersion: 100,
  /** A text field's value. */
  value: 500,
  /** Forms per account and mode. */
  forms: 100,
} as const;

/** Names the post uses itself; a metadata field may not take one. */
export const RESERVED_FIELD_NAMES = ["email", "locale", "tags", "pow", "website", "lang"] as const;
/** The honeypot: hidden from people (and labelled "leave empty" for screen readers), filled by bots. */
export const HONEYPOT_FIELD = "website";
/** The proof of work's solution (see proof-of-work.ts). */
export const POW_FIELD = "pow";
const FIELD_NAME = /^[a-z][a-z0-9_]{0,39}$/;
const LOCAL_HOSTS = new Set(["localhost", "127.0.0.1", "[::1]"]);
/** Longest address taken (RFC 5321's path limit). */
export const MAX_EMAIL_LENGTH = 254;

function text(value: string, max: number): boolean {
  return hasVisibleText(value) && value.length <= max && !/[\u0000-\u001f\u007f]/.test(value);
}

/** https, or http on the machine itself (a developer's page); no credentials in it. */
function webUrlProblem(raw: string, what: "url" | "origin"): string | undefined {
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    return `not an absolute ${what === "url" ? "URL" : "origin"}`;
  }
  if (url.protocol !== "https:" && !(url.protocol === "http:" && LOCAL_HOSTS.has(url.hostname))) return "must be https (http only for localhost)";
  if (url.username !== "" || url.password !== "") return "must not carry credentials";
  if (what === "origin" && url.origin !== raw) return "must be an exact origin: scheme://host[:port], lower case, no path or trailing slash";
  return undefined;
}

/**
 * The violations of a form's settings, the tags aside (whether they are
 * public tags of the tenant is the subscribers service's to say).
 */
export function formSettingsProblems(settings: FormSettings): Violation[] {
  const problems: Violation[] = [];
  const add = (field: string, description: string) => problems.push({ field, description });
  if (!text(settings.name, FORM_LIMITS.name)) add("name", `1-${FORM_LIMITS.name} characters with visible text, no control characters`);
  for (const [field, list] of [["tags", settings.tags], ["optional_tags", settings.optionalTags]] as const) {
    if (list.length > FORM_LIMITS.tags) add(field, `at most ${FORM_LIMITS.tags} tags`);
    if (new Set(list).size !== list.length) add(field, "a tag is listed twice");
  }
  if (settings.optionalTags.some((tag) => settings.tags.includes(tag))) add("optional_tags", "a tag everyone gets cannot also be optional");
  if (settings.fields.length > FORM_LIMITS.fields) add("fields", `at most ${FORM_LIMITS.fields} fields`);
  const names = new Set<string>();
  settings.fields.forEach((field, i) => {
    if (!FIELD_NAME.test(field.name)) add(`fields[${i}].name`, "1-40 characters of a-z, 0-9 and _, starting with a letter");
    else if ((RESERVED_FIELD_NAMES as readonly string[]).includes(field.name)) add(`fields[${i}].name`, `${RESERVED_FIELD_NAMES.join(", ")} are the form's own`);
    else if (names.has(field.name)) add(`fields[${i}].name`, "two fields have this name");
    names.add(field.name);
    if (!text(field.label, FORM_LIMITS.label)) add(`fields[${i}].label`, `1-${FORM_LIMITS.label} characters with visible text`);
  });
  for (const [field, url] of [["success_url", settings.successUrl], ["error_url", settings.errorUrl]] as const) {
    if (url === "") continue;
    const problem = url.length > FORM_LIMITS.url ? `at most ${FORM_LIMITS.url} characters` : webUrlProblem(url, "url");
    if (problem) add(field, problem);
  }
  if (settings.allowedOrigins.length === 0 || settings.allowedOrigins.length > FORM_LIMITS.origins) {
    add("allowed_origins", `1-${FORM_LIMITS.origins} origins: the sites whose pages may post to the form`);
  }
  settings.allowedOrigins.forEach((origin, i) => {
    const problem = webUrlProblem(origin, "origin");
    if (problem) add(`allowed_origins[${i}]`, problem);
  });
  if (settings.consentText === "" && settings.consentVersion === "") add("consent_text", "give the consent wording shown (consent_text), a version label of it (consent_version), or both");
  if (settings.consentText !== "" && !text(settings.consentText.replace(/\n/g, " "), FORM_LIMITS.consentText)) add("consent_text", `1-${FORM_LIMITS.consentText} characters with visible text`);
  if (settings.consentVersion !== "" && !text(settings.consentVersion, FORM_LIMITS.consentVersion)) add("consent_version", `1-${FORM_LIMITS.consentVersion} characters with visible text`);
  return problems;
}

/** Settings as stored: names and labels trimmed of invisible characters. */
export function normalizeSettings(settings: FormSettings): FormSettings {
  return {
    ...settings,
    name: trimInvisible(settings.name),
    fields: settings.fields.map((f) => ({ ...f, label: trimInvisible(f.label) })),
    consentText: settings.consentText.trim(),
    consentVersion: settings.consentVersion.trim(),
  };
}

/** The origin a browser's post came from: `Origin`, else `Referer`'s origin; undefined when neither says (or Origin is "null"). */
export function postOrigin(origin: string | undefined, referer: string | undefined): string | undefined {
  if (origin !== undefined && origin !== "null") return origin;
  if (origin === undefined && referer) {
    try {
      return new URL(referer).origin;
    } catch {
      return undefined;
    }
  }
  return undefined;
}

/** Why a post is refused, as the error redirect's `error` and the JSON answer's `code` name it. */
export type SignupRefusal =
  | "invalid_email"
  | "missing_field"
  | "invalid_field"
  | "origin_not_allowed"
  | "proof_of_work_required"
  | "proof_of_work_failed"
  | "rate_limited"
  | "form_not_found"
  | "unavailable";

export interface SignupRequest {
  email: string;
  tags: string[];
  metadata: Record<string, string | number | boolean>;
  /** "" when not asked or not given. */
  locale: string;
}

/** A post's fields as a signup for `form`, or why not (the first problem). */
export function readSignup(form: SignupFormView, post: URLSearchParams): { ok: true; signup: SignupRequest } | { ok: false; refusal: SignupRefusal; field: string } {
  const email = (post.get("email") ?? "").trim();
  if (email === "") return { ok: false, refusal: "missing_field", field: "email" };
  if (email.length > MAX_EMAIL_LENGTH || !/^[^\s@]+@[^\s@]+$/.test(email)) return { ok: false, refusal: "invalid_email", field: "email" };
  const chosen = post.getAll("tags");
  if (chosen.some((tag) => !form.optionalTags.includes(tag))) return { ok: false, refusal: "invalid_field", field: "tags" };
  let locale = "";
  if (form.askLocale) {
    locale = post.get("locale") ?? "";
    if (locale !== "" && !(LOCALES as readonly string[]).includes(locale)) return { ok: false, refusal: "invalid_field", field: "locale" };
  }
  const metadata: Record<string, string | number | boolean> = {};
  for (const field of form.fields) {
    const raw = (post.get(field.name) ?? "").trim();
    if (field.type === "boolean") {
      const on = raw === "on" || raw === "true" || raw === "1";
      if (field.required && !on) return { ok: false, refusal: "missing_field", field: field.name };
      if (raw !== "") metadata[field.name] = on;
      continue;
    }
    if (raw === "") {
      if (field.required) return { ok: false, refusal: "missing_field", field: field.name };
      continue;
    }
    if (field.type === "number") {
      const value = Number(raw);
      if (!/^-?[0-9]+(\.[0-9]+)?$/.test(raw) || !Number.isFinite(value)) return { ok: false, refusal: "invalid_field", field: field.name };
      metadata[field.name] = value;
    } else {
      if (raw.length > FORM_LIMITS.value || /[\u0000-\u0008\u000b-\u001f\u007f]/.test(raw)) return { ok: false, refusal: "invalid_field", field: field.name };
      metadata[field.name] = raw;
    }
  }
  return { ok: true, signup: { email, tags: [...form.tags, ...form.optionalTags.filter((tag) => chosen.includes(tag))], metadata, locale } };
}
