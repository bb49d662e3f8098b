import { Code, ConnectError, createClient, type Transport } from "@connectrpc/connect";
import { campaigns } from "@emailsvc/proto";
import { AppError } from "@emailsvc/errors";
import { callHeaders } from "@emailsvc/tenancy";
import type { TemplateUsers } from "../usecases/ports.js";

// The service templates calls: campaigns, which holds the triggers and
// campaigns that use a template (the adapter of the TemplateUsers port), with
// the caller's tenant in the headers.

const TIMEOUT_MS = 10_000;

export function templateUsersClient(transport: Transport): TemplateUsers {
  const client = createClient(campaigns.CampaignService, transport);
  return {
    async of(call, templateId) {
      try {
        const res = await client.listTemplateUsers({ templateId }, { headers: callHeaders(call), timeoutMs: TIMEOUT_MS });
        return {
          users: res.users.map((u) => ({ kind: u.kind === "campaign" ? "campaign" : "trigger", id: u.id, state: u.state })),
          total: res.total,
        };
      } catch (err) {
        // Not knowing who uses it, the template is not deleted: the caller may try again.
        const ce = ConnectError.from(err);
        throw new AppError("unavailable", "campaigns_unavailable", `the campaigns service could not say who uses the template (${Code[ce.code]}); try again`);
      }
    },
  };
}
