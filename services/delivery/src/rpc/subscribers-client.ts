import { Code, ConnectError, createClient, type Transport } from "@connectrpc/connect";
import { SubscriberService, SubscriberStatus } from "@emailsvc/proto";
import { callHeaders } from "@emailsvc/runtime";
import { RecipientsUnavailableError, type RecipientDirectory } from "../domain/recipients.js";

// RecipientDirectory over gRPC: SubscriberService.GetSubscriberByEmail in the
// email's own tenant (`<account>:<mode>`), acting as the system.
export function subscribersDirectory(transport: Transport, options: { timeoutMs?: number } = {}): RecipientDirectory {
  const client = createClient(SubscriberService, transport);
  const timeoutMs = options.timeoutMs ?? 5000;
  return {
    async lookup(tenant, email, signal) {
      const [accountId = "", mode = ""] = tenant.split(":");
      const headers = callHeaders({ tenant: { accountId, mode: mode === "live" ? "live" : "test" }, actor: "system", requestId: "" });
      try {
        const res = await client.getSubscriberByEmail({ email }, { headers, timeoutMs, signal });
        if (!res.subscriber?.id) return undefined;
        return { subscriberId: res.subscriber.id, metadata: res.subscriber.metadata ?? {}, status: statusName(res.subscriber.status) };
      } catch (err) {
        const code = ConnectError.from(err).code;
        // Not a subscriber (or an address the subscribers service would not store): no built-ins.
        if (code === Code.NotFound || code === Code.InvalidArgument) return undefined;
        throw new RecipientsUnavailableError();
      }
    },
  };
}

/** `SUBSCRIBER_STATUS_ACTIVE` -> `active`. */
function statusName(status: SubscriberStatus): string {
  return (SubscriberStatus[status] ?? "UNSPECIFIED").toLowerCase();
}
