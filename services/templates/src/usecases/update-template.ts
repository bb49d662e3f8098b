import { AppError } from "@emailsvc/errors";
import { newId } from "@emailsvc/ids";
import {
  validateMjmlSize,
  validateName,
  validateSender,
  validateIgnoreSuppressions,
  validateSubject,
  type Category,
  type TemplateView,
} from "../domain/template.js";
import type { TemplateVersionDoc } from "../storage/documents.js";
import { checkSubject, compileBody, mergeNames, type CompiledBody } from "./content.js";
import { discardVersion } from "./create-template.js";
import { loadTemplate, senderFields, senderOf, templateView, type Deps, type Scope } from "./deps.js";

export interface UpdateTemplateInput {
  id: string;
  name: unknown;
  subject: unknown;
  mjml: unknown;
  /** Undefined: unchanged. */
  category: Category | undefined;
  /** Sender fields: undefined unchanged, "" removed. */
  fromEmail?: string | undefined;
  fromName?: string | undefined;
  replyTo?: string | undefined;
  /** Undefined: unchanged; [] removes them. */
  ignoreSuppressions?: readonly string[] | undefined;
}

/** Lost races retried before answering 409 concurrent_update. */
const ATTEMPTS = 5;

/**
 * Changes name and category in place; a change of subject, MJML or sender
 * makes a new version (mail queued with a version keeps its sender). No transactions: the new version document is written first, then
 * the template's pointer moves from version n to n+1 with an update guarded by
 * (version n, its document id). Of two concurrent updates one moves the
 * pointer; the other discards its version document and runs again on top of
 * the winner (so both changes land, last writer wins per field) — up to
 * ATTEMPTS times, then 409. The slug never changes.
 */
export async function updateTemplate(deps: Deps, scope: Scope, input: UpdateTemplateInput): Promise<TemplateView> {
  const name = input.name === undefined ? undefined : validateName(input.name);
  const subject = input.subject === undefined ? undefined : validateSubject(input.subject);
  const mjml = input.mjml === undefined ? undefined : validateMjmlSize(input.mjml);
  const subjectVariables = subject === undefined ? undefined : checkSubject(subject);
  // Compiled at most once, however many attempts.
  let body: Promise<CompiledBody> | undefined;
  const compiled = (source: string) => (body ??= compileBody(deps.compiler, source));

  for (let attempt = 1; attempt <= ATTEMPTS; attempt++) {
    const current = await loadTemplate(scope, input.id);
    const set: Record<string, unknown> = {};
    if (name !== undefined && name !== current.name) set.name = name;
    if (input.category !== undefined && input.category !== current.category) set.category = input.category;
    // Checked against the category the template will have (a change to marketing with overrides left is refused).
    const category = input.category ?? current.category;
    const ignore = validateIgnoreSuppressions(input.ignoreSuppressions ?? current.ignore_suppressions ?? [], category);
    if (JSON.stringify(ignore) !== JSON.stringify(current.ignore_suppressions ?? [])) set.ignore_suppressions = ignore;
    const newSubject = subject !== undefined && subject !== current.subject;
    const newMjml = mjml !== undefined && mjml !== current.mjml;
    const currentSender = senderOf(current);
    const sender = validateSender(input, currentSender);
    const newSender = JSON.stringify(sender) !== JSON.stringify(currentSender);
    if (!newSubject && !newMjml && !newSender && Object.keys(set).length === 0) return templateView(current);

    const now = deps.now();
    let versionId: string | undefined;
    if (newSubject || newMjml || newSender) {
      let html: string;
      let htmlVariables: string[];
      if (newMjml) {
        ({ html, variables: htmlVariables } = await compiled(mjml));
      } else {
        const previous = await scope.versions.findOne({ _id: current.version_id });
        if (!previous) throw new Error(`version ${current.version_id} of ${current._id} is missing`);
        html = previous.html;
        htmlVariables = previous.body_variables;
      }
      const nextSubject = newSubject ? subject : current.subject;
      const variables = mergeNames(newSubject ? subjectVariables! : checkSubject(current.subject), htmlVariables);
      const version: TemplateVersionDoc = {
        _id: newId("tpv"),
        tenant: scope.versions.tenant,
        template_id: current._id,
        version: current.version + 1,
        prev: current.version_id,
        subject: nextSubject,
        mjml: newMjml ? mjml : current.mjml,
        html,
        variables,
        body_variables: htmlVariables,
        ...senderFields(sender),
        created_at: now,
      };
      await scope.versions.insertOne(version);
      versionId = version._id;
      Object.assign(set, {
        version: version.version,
        version_id: version._id,
        subject: version.subject,
        mjml: version.mjml,
        variables,
        ...senderFields(sender),
      });
    }
    set.updated_at = now;
    const doc = await scope.templates.updateOne(
      { _id: current._id, version: current.version, version_id: current.version_id, deleted: false },
      { $set: set },
    );
    if (doc) return templateView(doc);
    // Lost to a concurrent update (or delete): drop the unreferenced version, read again.
    if (versionId) await discardVersion(deps, scope, versionId);
  }
  throw new AppError("conflict", "concurrent_update", "the template is being changed concurrently; retry");
}
