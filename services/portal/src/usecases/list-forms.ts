import { pageById } from "@emailsvc/ids";
import { tenantKey, type CallContext } from "@emailsvc/tenancy";
import type { SignupFormView } from "../domain/signup-form.js";
import { formView, type FormDeps } from "./forms.js";

export async function listForms(deps: FormDeps, call: CallContext, request: { limit: number; cursor: string }): Promise<{ forms: SignupFormView[]; nextCursor: string }> {
  const forms = deps.storage.forTenant(tenantKey(call.tenant)).forms;
  // In id order: form ids are random (public), so this is not the order of creation.
  const page = await pageById(request, { idPrefix: "frm" }, ({ range, options }) => forms.find(range, options));
  return { forms: page.docs.map(formView), nextCursor: page.nextCursor };
}
