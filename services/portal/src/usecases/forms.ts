import { AppError, invalid, type Violation } from "@emailsvc/errors";
import { isId, newRandomId, pageById } from "@emailsvc/ids";
import { tenantKey, type CallContext } from "@emailsvc/tenancy";
import { FORM_LIMITS, formSettingsProblems, normalizeSettings, type FormSettings, type SignupFormView } from "../domain/signup-form.js";
import type { FormDoc, FormStorage } from "../storage/forms.js";

// An account's signup forms (FormService; REST /api/v1/forms): settings kept
// by the portal, per account and mode, which its page server reads when a
// post arrives.

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

function docFields(settings: FormSettings): Omit<FormDoc, "_id" | "tenant" | "created_at" | "updated_at"> {
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
async function checkSettings(deps: FormDeps, call: CallContext, raw: FormSettings): Promise<FormSettings> {
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

export async function createForm(deps: FormDeps, call: CallContext, settings: FormSettings): Promise<SignupFormView> {
  const checked = await checkSettings(deps, call, settings);
  const forms = deps.storage.forTenant(tenantKey(call.tenant)).forms;
  // A bound per tenant (read, then written: two creates at once may pass it by one, which is harmless).
  if ((await forms.count({})) >= FORM_LIMITS.forms) {
    throw new AppError("conflict", "form_limit_reached", `an account has at most ${FORM_LIMITS.forms} forms per mode; delete one first`);
  }
  const now = deps.now();
  const doc = { _id: newRandomId("frm"), ...docFields(checked), created_at: now, updated_at: now };
  await forms.insertOne(doc);
  return formView({ ...doc, tenant: tenantKey(call.tenant) });
}

export async function getForm(deps: FormDeps, call: CallContext, id: string): Promise<SignupFormView> {
  if (!isId("frm", id)) throw formNotFound();
  const doc = await deps.storage.forTenant(tenantKey(call.tenant)).forms.findOne({ _id: id });
  if (!doc) throw formNotFound();
  return formView(doc);
}

export async function listForms(deps: FormDeps, call: CallContext, request: { limit: number; cursor: string }): Promise<{ forms: SignupFormView[]; nextCursor: string }> {
  const forms = deps.storage.forTenant(tenantKey(call.tenant)).forms;
  // In id order: form ids are random (public), so this is not the order of creation.
  const page = await pageById(request, { idPrefix: "frm" }, ({ range, options }) => forms.find(range, options));
  return { forms: page.docs.map(formView), nextCursor: page.nextCursor };
}

/** The settings a change may name (FormInput's fields). */
export const FORM_SETTING_PATHS = {
  name: "name",
  tags: "tags",
  optional_tags: "optionalTags",
  ask_locale: "askLocale",
  fields: "fields",
  success_url: "successUrl",
  error_url: "errorUrl",
  allowed_origins: "allowedOrigins",
  consent_text: "consentText",
  consent_version: "consentVersion",
} as const satisfies Record<string, keyof FormSettings>;

/** Replaces the settings `change` holds; the whole result is checked as a create would be. */
export async function updateForm(deps: FormDeps, call: CallContext, id: string, change: Partial<FormSettings>): Promise<SignupFormView> {
  const current = await getForm(deps, call, id);
  const checked = await checkSettings(deps, call, { ...current, ...change });
  const updated = await deps.storage
    .forTenant(tenantKey(call.tenant))
    .forms.updateOne({ _id: id }, { $set: { ...docFields(checked), updated_at: deps.now() } });
  if (!updated) throw formNotFound();
  deps.changed?.(id);
  return formView(updated);
}

export async function deleteForm(deps: FormDeps, call: CallContext, id: string): Promise<void> {
  if (!isId("frm", id)) throw formNotFound();
  const deleted = await deps.storage.forTenant(tenantKey(call.tenant)).forms.deleteOne({ _id: id });
  if (!deleted) throw formNotFound();
  deps.changed?.(id);
}
