import { AppError, invalid, type Violation } from "@emailsvc/errors";
import type { CallContext } from "@emailsvc/tenancy";
import { formSettingsProblems, normalizeSettings, type FormSettings, type SignupFormView } from "../domain/signup-form.js";
import type { FormDoc, FormStorage } from "../storage/forms.js";

// An account's signup forms (FormService; REST /api/v1/forms): settings kept
// by the portal, per account and mode, which its page server reads when a
// post arrives. This file holds what the form use cases share (their ports,
// the view, the checks); each operation is a file of its own beside it
// (create-form.ts, get-form.ts, list-forms.ts, update-form.ts, delete-form.ts).

/** The tenant's public tag names (the subscribers service owns tags). */
export interface PublicTagNames {
  publicTagNames(call: CallContext): Promise<Set<string>>;
}

export interface FormDeps {
  storage: FormStorage;
  tags: PublicTagNames;
  now: () => number;
  /** Told after a form changed or was deleted (this replica's page cache forgets it at once). */
  changed?: (formId: string) => void;
}

export function formNotFound(): AppError {
  return new AppError("not_found", "form_not_found", "form not found");
}

export function formView(doc: FormDoc): SignupFormView {
  return {
    id: doc._id,
    name: doc.name,
    tags: doc.tags,
    optionalTags: doc.optional_tags,
    askLocale: doc.ask_locale,
    fields: doc.fields,
    successUrl: doc.success_url,
    errorUrl: doc.error_url,
    allowedOrigins: doc.allowed_origins,
    consentText: doc.consent_text,
    consentVersion: doc.consent_version,
    createdAt: doc.created_at,
    updatedAt: doc.updated_at,
  };
}

export function docFields(settings: FormSettings): Omit<FormDoc, "_id" | "tenant" | "created_at" | "updated_at"> {
  return {
    name: settings.name,
    tags: settings.tags,
    optional_tags: settings.optionalTags,
    ask_locale: settings.askLocale,
    fields: settings.fields.map((f) => ({ name: f.name, label: f.label, type: f.type, required: f.required })),
    success_url: settings.successUrl,
    error_url: settings.errorUrl,
    allowed_origins: settings.allowedOrigins,
    consent_text: settings.consentText,
    consent_version: settings.consentVersion,
  };
}

/** Every rule of the settings, the tags' being public ones of the tenant included; throws INVALID_ARGUMENT with all violations. */
export async function checkSettings(deps: FormDeps, call: CallContext, raw: FormSettings): Promise<FormSettings> {
  const settings = normalizeSettings(raw);
  const problems: Violation[] = formSettingsProblems(settings);
  if (settings.tags.length + settings.optionalTags.length > 0) {
    const publicTags = await deps.tags.publicTagNames(call);
    for (const [field, list] of [["tags", settings.tags], ["optional_tags", settings.optionalTags]] as const) {
      const unknown = list.filter((tag) => !publicTags.has(tag));
      // Only public tags: a form must not let strangers put themselves into a private segment.
      if (unknown.length > 0) problems.push({ field, description: `not public tags of this account: ${unknown.slice(0, 5).join(", ")}` });
    }
  }
  if (problems.length > 0) throw invalid("the form's settings are invalid", problems);
  return settings;
}
