import { parseAddress } from "@emailsvc/address";
import { AppError, invalid } from "@emailsvc/errors";
import type { MjmlProblem } from "./mjml.js";
import type { TemplateProblem } from "@emailsvc/render";

export type Category = "transactional" | "marketing";

/**
 * The suppression-list reasons a transactional template's mail is sent
 * despite (by default transactional mail skips an address that hard-bounced
 * or complained; a password reset the person asks for may say otherwise).
 * Marketing mail never ignores the list.
 */
export const IGNORABLE_SUPPRESSIONS = ["hard_bounce", "complaint"] as const;
export type IgnorableSuppression = (typeof IGNORABLE_SUPPRESSIONS)[number];

/** `ignore_suppressions` as given: a subset of IGNORABLE_SUPPRESSIONS (sorted, once each), only on a transactional template. */
export function validateIgnoreSuppressions(raw: readonly string[], category: Category): IgnorableSuppression[] {
  const field = "ignore_suppressions";
  const bad = raw.findIndex((r) => !(IGNORABLE_SUPPRESSIONS as readonly string[]).includes(r));
  if (bad >= 0) throw invalid(`${field} holds an unknown reason`, [{ field: `${field}[${bad}]`, description: `one of ${IGNORABLE_SUPPRESSIONS.join(", ")}` }]);
  if (raw.length > 0 && category !== "transactional") {
    throw invalid(`${field} is for transactional templates only`, [{ field, description: "marketing mail never ignores the suppression list" }]);
  }
  return [...new Set(raw as IgnorableSuppression[])].sort();
}

export interface TemplateView {
  id: string;
  slug: string;
  name: string;
  subject: string;
  mjml: string;
  category: Category;
  ignoreSuppressions: IgnorableSuppression[];
  version: number;
  variables: string[];
  /** The template's sender ("" where none: mail is From EMAIL_FROM). */
  sender: TemplateSender;
  createdAt: number;
  updatedAt: number;
}

/** A template's From address, From display name and Reply-To; "" for each left out. */
export interface TemplateSender {
  fromEmail: string;
  fromName: string;
  replyTo: string;
}

export const NO_SENDER: TemplateSender = { fromEmail: "", fromName: "", replyTo: "" };

/**
 * The sender as given, each field checked: addresses by the one address rule
 * (@emailsvc/address), a display name of 1-100 characters without control
 * characters. "" removes a field; undefined leaves it as in `current`.
 */
export function validateSender(
  input: { fromEmail?: string | undefined; fromName?: string | undefined; replyTo?: string | undefined },
  current: TemplateSender = NO_SENDER,
): TemplateSender {
  const address = (raw: string | undefined, field: string, was: string): string => {
    if (raw === undefined) return was;
    if (raw.trim() === "") return "";
    const parsed = parseAddress(raw);
    if (!parsed.ok) throw invalid(`${field} is not a valid address: it ${parsed.description}`, [{ field, description: "is not a valid email address" }]);
    return parsed.address;
  };
  let fromName = current.fromName;
  if (input.fromName !== undefined) {
    fromName = input.fromName.trim();
    if (fromName.length > 100 || CONTROL.test(fromName)) {
      throw invalid("from_name is invalid", [{ field: "from_name", description: "1-100 characters, no control characters or line breaks" }]);
    }
  }
  return { fromEmail: address(input.fromEmail, "from_email", current.fromEmail), fromName, replyTo: address(input.replyTo, "reply_to", current.replyTo) };
}

/** One compiled, immutable version, as delivery renders it. */
export interface CompiledView {
  templateId: string;
  slug: string;
  version: number;
  category: Category;
  ignoreSuppressions: IgnorableSuppression[];
  subject: string;
  html: string;
  variables: string[];
  /** The version's sender. */
  sender: TemplateSender;
}

export const TEMPLATE_LIMITS = {
  nameLength: 200,
  /** RFC 5322's line limit; the rendered subject is one line. */
  subjectLength: 998,
  mjmlBytes: 512 * 1024,
  slugLength: 100,
  /** Room left for "-<n>" when a derived slug is taken. */
  derivedSlugLength: 90,
  /** Preview variables, as JSON. */
  variablesBytes: 64 * 1024,
} as const;

// eslint-disable-next-line no-control-regex
const CONTROL = /[\u0000-\u001f\u007f]/;
const SLUG = /^[a-z0-9]+(?:-[a-z0-9]+)*$/;

export function validateName(raw: unknown): string {
  if (typeof raw !== "string" || raw.trim() === "") throw invalid("name is required", [{ field: "name", description: "is required" }]);
  const name = raw.trim();
  if (name.length > TEMPLATE_LIMITS.nameLength || CONTROL.test(name)) {
    throw invalid("name is invalid", [{ field: "name", description: `1-${TEMPLATE_LIMITS.nameLength} characters, no control characters` }]);
  }
  return name;
}

/** The subject's source (Handlebars is checked separately): one line, 1-998 characters. */
export function validateSubject(raw: unknown): string {
  if (typeof raw !== "string" || raw.trim() === "") {
    throw invalid("subject is required", [{ field: "subject", description: "is required" }]);
  }
  if (raw.length > TEMPLATE_LIMITS.subjectLength || CONTROL.test(raw)) {
    throw invalid("subject is invalid", [
      { field: "subject", description: `1-${TEMPLATE_LIMITS.subjectLength} characters on one line, no control characters` },
    ]);
  }
  return raw;
}

export function validateMjmlSize(raw: unknown): string {
  if (typeof raw !== "string" || raw.trim() === "") {
    throw invalid("mjml_content is required", [{ field: "mjml_content", description: "is required" }]);
  }
  if (Buffer.byteLength(raw, "utf8") > TEMPLATE_LIMITS.mjmlBytes) {
    throw new AppError("too_large", "mjml_too_large", "mjml_content is too large", {
      fieldViolations: [{ field: "mjml_content", description: `at most ${TEMPLATE_LIMITS.mjmlBytes / 1024} KiB` }],
    });
  }
  return raw;
}

export function validateSlug(raw: string): string {
  if (raw.length > TEMPLATE_LIMITS.slugLength || !SLUG.test(raw)) {
    throw invalid("slug is invalid", [
      { field: "slug", description: `1-${TEMPLATE_LIMITS.slugLength} lower-case letters, digits and single dashes, e.g. welcome-email` },
    ]);
  }
  return raw;
}

/** "Welcome E-mail (v2)!" → "welcome-e-mail-v2"; "Grüße" → "grusse"; nothing usable → "template". */
export function deriveSlug(name: string): string {
  const ascii = name
    .normalize("NFKD")
    .replace(/[\u0300-\u036f]/g, "")
    .replace(/ß/g, "ss")
    .toLowerCase()
    .replace(/[^a-z0-9]+/g, "-")
    .replace(/^-+|-+$/g, "");
  const cut = ascii.slice(0, TEMPLATE_LIMITS.derivedSlugLength).replace(/-+$/, "");
  return cut || "template";
}

/** The n-th candidate for a derived slug: base, base-2, base-3, ... */
export function slugCandidate(base: string, n: number): string {
  return n <= 1 ? base : `${base}-${n}`;
}

/**
 * The smallest free candidate for `base`, given the taken slugs that start with
 * it (other slugs such as `base-news` are ignored).
 */
export function firstFreeSlug(base: string, taken: readonly string[]): string {
  const used = new Set<number>();
  for (const slug of taken) {
    if (slug === base) used.add(1);
    else if (slug.startsWith(`${base}-`)) {
      const rest = slug.slice(base.length + 1);
      if (/^[1-9][0-9]{0,8}$/.test(rest) && Number(rest) >= 2) used.add(Number(rest));
    }
  }
  let n = 1;
  while (used.has(n)) n++;
  return slugCandidate(base, n);
}

export function invalidMjml(problems: MjmlProblem[]): AppError {
  return new AppError("invalid", "invalid_mjml", "mjml_content is not valid MJML", {
    fieldViolations: problems.map((p) => ({ field: "mjml_content", description: describe(p.line, p.message) })),
  });
}

/**
 * The 400 for a subject or body that is not a template we can render: 400
 * `template_exceeds_limits` naming each limit passed (TEMPLATE_LIMITS of
 * @emailsvc/render) when that is the reason, else `invalid_template` naming
 * each syntax problem, both with their lines.
 */
export function invalidTemplate(field: "subject" | "mjml_content", problems: TemplateProblem[], note?: string): AppError {
  const limits = problems.filter((p) => p.limit !== undefined);
  const shown = limits.length > 0 ? limits : problems;
  return new AppError(
    "invalid",
    limits.length > 0 ? "template_exceeds_limits" : "invalid_template",
    limits.length > 0 ? `${field} exceeds the template limits` : `${field} is not a valid template`,
    { fieldViolations: shown.map((p) => ({ field, description: describe(p.line, note ? `${note}: ${p.message}` : p.message) })) },
  );
}

function describe(line: number, message: string): string {
  return line > 0 ? `line ${line}: ${message}` : message;
}
