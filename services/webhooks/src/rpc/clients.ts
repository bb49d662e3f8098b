import { Code, ConnectError, createClient, type Transport } from "@connectrpc/connect";
import { delivery } from "@emailsvc/proto";
import { callHeaders, tenantOfKey } from "@emailsvc/tenancy";
import type { RecipientLookup } from "../usecases/ports.js";

const TIMEOUT_MS = 5000;

/** The recipient lookup over delivery's GetEmail, in the email's tenant. */
export function recipientLookup(transport: Transport): RecipientLookup {
  const client = createClient(delivery.DeliveryService, transport);
  return async (tenant, emailId) => {
    try {
      const res = await client.getEmail(
        { id: emailId },
        { headers: callHeaders({ tenant: tenantOfKey(tenant), actor: "webhooks", requestId: emailId }), timeoutMs: TIMEOUT_MS },
      );
      return res.email?.to || null;
    } catch (err) {
      if (ConnectError.from(err).code === Code.NotFound) return null;
      throw err;
    }
  };
}
