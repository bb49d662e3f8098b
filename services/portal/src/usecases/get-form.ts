import { isId } from "@emailsvc/ids";
import { tenantKey, type CallContext } from "@emailsvc/tenancy";
import type { SignupFormView } from "../domain/signup-form.js";
import { formNotFound, formView, type FormDeps } from "./forms.js";

export async function getForm(deps: FormDeps, call: CallContext, id: string): Promise<SignupFormView> {
  if (!isId("frm", id)) throw formNotFound();
  const doc = await deps.storage.forTenant(tenantKey(call.tenant)).forms.findOne({ _id: id });
  if (!doc) throw formNotFound();
  return formView(doc);
}
