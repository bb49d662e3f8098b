import { createClient } from "@connectrpc/connect";
import { delivery } from "@emailsvc/proto";
import { HEADER_REQUEST_ID } from "@emailsvc/tenancy";
import { readBody } from "../../http/body.js";
import { providerNotificationGuard } from "../../http/rate-limit.js";
import { requireClient } from "../../routes/calls.js";
import { defineRoute, type RouteKit } from "../../routes/define.js";
import type { ResourceContext } from "../resource.js";
import { SES_NOTIFICATION_BODY_LIMIT_BYTES } from "./schemas.js";

const OUTCOMES: Record<delivery.ProviderNotificationOutcome, string> = {
  [delivery.ProviderNotificationOutcome.UNSPECIFIED]: "ignored",
  [delivery.ProviderNotificationOutcome.APPLIED]: "applied",
  [delivery.ProviderNotificationOutcome.UNCHANGED]: "unchanged",
  [delivery.ProviderNotificationOutcome.SUBSCRIPTION_CONFIRMED]: "subscription_confirmed",
  [delivery.ProviderNotificationOutcome.IGNORED]: "ignored",
};

/**
 * POST /api/v1/providers/ses/notifications: SNS's post, charged to its
 * client address, read up to the limit and handed to the delivery service
 * unread (whatever its Content-Type: SNS sends JSON as text/plain), which
 * checks the topic and the signature and applies it. Its refusals
 * (sns_message_malformed, sns_signature_invalid, …) pass through.
 */
export function providerNotificationRoutes(kit: RouteKit, context: ResourceContext): void {
  const transport = context.transport("delivery");
  const client = transport && createClient(delivery.DeliveryService, transport);
  const guard = providerNotificationGuard(kit.limiter);
  defineRoute(kit, "post", "/api/v1/providers/ses/notifications", "takeSesNotification", async (ctx) => {
    await guard(ctx);
    const body = await readBody(ctx.req, SES_NOTIFICATION_BODY_LIMIT_BYTES);
    const res = await requireClient(client, "delivery").takeProviderNotification(
      { provider: "ses", body },
      { headers: { [HEADER_REQUEST_ID]: ctx.state.requestId }, timeoutMs: context.timeoutMs },
    );
    ctx.status = 200;
    ctx.body = { outcome: OUTCOMES[res.outcome] };
  });
}
