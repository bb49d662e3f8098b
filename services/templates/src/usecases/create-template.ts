import { AppError, invalid } from "@emailsvc/errors";
import { newId } from "@emailsvc/ids";
import { DuplicateKeyError } from "@emailsvc/storage";
import {
  deriveSlug,
  firstFreeSlug,
  validateMjmlSize,
  validateName,
  validateSlug,
  validateSender,
  validateIgnoreSuppressions,
  validateSubject,
  type Category,
  type TemplateView,
} from "../domain/template.js";
import type { TemplateDoc, TemplateVersionDoc } from "../storage/documents.js";
import { checkSubject, compileBody, mergeNames } from "./content.js";
import { senderFields, templateView, type Deps, type Scope } from "./deps.js";

export interface CreateTemplateInput {
  name: unknown;
  subject: unknown;
  mjml: unknown;
  category: Category | undefined;
  /** See validateIgnoreSuppressions; absent: none. */
  ignoreSuppressions?: readonly string[];
  /** Derived from the name when absent. */
  slug: string | undefined;
  /** Optional sender fields. */
  fromEmail?: string | undefined;
  fromName?: string | undefined;
  replyTo?: string | undefined;
}

/** Inserts with a derived slug that loses to a concurrent create this many times give up. */
const SLUG_ATTEMPTS = 8;

export function slugTaken(existingId: string | undefined): AppError {
  return new AppError("conflict", "slug_taken", "a template with this slug already exists", {
    ...(existingId ? { existingId } : {}),
    fieldViolations: [{ field: "slug", description: "is already taken" }],
  });
}

/**
 * Creates a template and its version 1. The version is written first: if the
 * template insert then fails (slug taken, crash), an unreferenced version is
 * left behind, which nothing reads.
 */
export async function createTemplate(deps: Deps, scope: Scope, input: CreateTemplateInput): Promise<TemplateView> {
  const name = validateName(input.name);
  const subject = validateSubject(input.subject);
  const mjml = validateMjmlSize(input.mjml);
  if (!input.category) throw invalid("category is required", [{ field: "category", description: "transactional or marketing" }]);
  const category = input.category;
  const ignoreSuppressions = validateIgnoreSuppressions(input.ignoreSuppressions ?? [], category);
  const givenSlug = input.slug === undefined ? undefined : validateSlug(input.slug);
  const sender = senderFields(validateSender(input));

  const subjectVariables = checkSubject(subject);
  // A given slug that is taken fails before the (costly) MJML compile.
  if (givenSlug !== undefined) {
    const holder = await scope.templates.findOne({ slug_key: givenSlug });
    if (holder) throw slugTaken(holder._id);
  }
  const body = await compileBody(deps.compiler, mjml);
  const variables = mergeNames(subjectVariables, body.variables);

  const now = deps.now();
  const id = newId("tpl");
  const version: TemplateVersionDoc = {
    _id: newId("tpv"),
    tenant: scope.versions.tenant,
    template_id: id,
    version: 1,
    prev: "",
    subject,
    mjml,
    html: body.html,
    variables,
    body_variables: body.variables,
    ...sender,
    created_at: now,
  };
  await scope.versions.insertOne(version);

  const base = givenSlug ?? deriveSlug(name);
  let slug = base;
  for (let attempt = 1; attempt <= SLUG_ATTEMPTS; attempt++) {
    const doc: TemplateDoc = {
      _id: id,
      tenant: scope.templates.tenant,
      name,
      slug,
      slug_key: slug,
      category,
      ...(ignoreSuppressions.length > 0 ? { ignore_suppressions: ignoreSuppressions } : {}),
      version: 1,
      version_id: version._id,
      subject,
      mjml,
      variables,
      ...sender,
      created_at: now,
      updated_at: now,
      deleted: false,
      deleted_at: null,
    };
    try {
      await scope.templates.insertOne(doc);
      return templateView(doc);
    } catch (err) {
      if (!(err instanceof DuplicateKeyError)) {
        await discard(deps, scope, version._id);
        throw err;
      }
      if (givenSlug !== undefined) {
        await discard(deps, scope, version._id);
        throw slugTaken((await scope.templates.findOne({ slug_key: givenSlug }))?._id);
      }
      slug = await freeDerivedSlug(scope, base);
    }
  }
  await discard(deps, scope, version._id);
  throw new AppError("conflict", "slug_taken", "could not claim a free slug for this name; pass a slug", {
    fieldViolations: [{ field: "slug", description: "no free slug derived from the name; give one" }],
  });
}

/** `base`, `base-2`, `base-3`...: the first one no live template holds. */
async function freeDerivedSlug(scope: Scope, base: string): Promise<string> {
  // Every slug_key that is `base` or starts with `base-` sorts in [base, base + "-~"]
  // (slugs use [a-z0-9-], all below "~"; deleted keys `<slug>~<id>` sort after).
  const holders = await scope.templates.find({ slug_key: { $gte: base, $lte: `${base}-~` } }, { limit: 5000 });
  return firstFreeSlug(base, holders.map((h) => h.slug_key));
}

/** Removes a version nothing will reference; a failure only leaves a harmless orphan. */
async function discard(deps: Deps, scope: Scope, versionId: string): Promise<void> {
  try {
    await scope.versions.deleteOne({ _id: versionId });
  } catch (err) {
    deps.logger.warn({ version_id: versionId, err: err instanceof Error ? err.message : String(err) }, "orphan version left behind");
  }
}

export { discard as discardVersion };
