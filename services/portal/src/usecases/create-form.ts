import { AppError } from "@emailsvc/errors";
import { newRandomId } from "@emailsvc/ids";
import { tenantKey, type CallContext } from "@emailsvc/tenancy";
import { FORM_LIMITS, type FormSettings, type SignupFormView } from "../domain/signup-form.js";
import { checkSettings, docFields, formView, type FormDeps } from "./forms.js";

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
