import { tenantKey, type CallContext } from "@emailsvc/tenancy";
import type { FormSettings, SignupFormView } from "../domain/signup-form.js";
import { checkSettings, docFields, formNotFound, formView, type FormDeps } from "./forms.js";
import { getForm } from "./get-form.js";

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
