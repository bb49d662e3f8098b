import { isId } from "@emailsvc/ids";
import { tenantKey, type CallContext } from "@emailsvc/tenancy";
import { formNotFound, type FormDeps } from "./forms.js";

export async function deleteForm(deps: FormDeps, call: CallContext, id: string): Promise<void> {
  if (!isId("frm", id)) throw formNotFound();
  const deleted = await deps.storage.forTenant(tenantKey(call.tenant)).forms.deleteOne({ _id: id });
  if (!deleted) throw formNotFound();
  deps.changed?.(id);
}
