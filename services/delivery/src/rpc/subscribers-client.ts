import { Code, ConnectError, createClient, type Transport } from "@connectrpc/connect";
import { AudienceService, SubscriberService, SubscriberStatus } from "@emailsvc/proto";
import { callHeaders, tenantOfKey } from "@emailsvc/runtime";
import { RecipientsUnavailableError, type AddressedRecipient, type RecipientDirectory } from "../domain/recipients.js";

// RecipientDirectory over gRPC: SubscriberService.GetSubscriberByEmail and
// AudienceService.GetRecipients in the email's own tenant (`<account>:<mode>`),
// acting as the system.
export function subscribersDirectory(transport: Transport, options: { timeoutMs?: number } = {}): RecipientDirectory {
  const client = createClient(SubscriberService, transport);
  const audience = createClient(AudienceService, transport);
  const timeoutMs = options.timeoutMs ?? 5000;
  const headersOf = (tenant: string) => {
    return callHeaders({ tenant: tenantOfKey(tenant), actor: "system", requestId: "" });
  };
  return {
    async byIds(tenant, ids, signal) {
      const found = new Map<string, AddressedRecipient>();
      if (ids.length === 0) return found;
      try {
        const res = await audience.getRecipients({ subscriberIds: [...ids] }, { headers: headersOf(tenant), timeoutMs, signal });
        for (const r of res.recipients) {
          found.set(r.subscriberId, { subscriberId: r.subscriberId, email: r.email, metadata: r.metadata ?? {}, status: statusName(r.status), locale: r.locale || undefined });
        }
        return found;
      } catch {
        throw new RecipientsUnavailableError();
      }
    },
    async lookup(tenant, email, signal) {
      const headers = headersOf(tenant);
      try {
        const res = await client.getSubscriberByEmail({ email }, { headers, timeoutMs, signal });
        if (!res.subscriber?.id) return undefined;
        return { subscriberId: res.subscriber.id, metadata: res.subscriber.metadata ?? {}, status: statusName(res.subscriber.status), locale: res.subscriber.locale || undefined };
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
