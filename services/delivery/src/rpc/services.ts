import type { ConnectRouter } from "@connectrpc/connect";
import { delivery } from "@emailsvc/proto";
import { readCallContext } from "@emailsvc/runtime";
import { scopeOf, type Deps } from "../usecases/deps.js";
import { getEmail, getSandboxMessage } from "../usecases/get-email.js";
import { listEmails } from "../usecases/list-emails.js";
import { sendEmail } from "../usecases/send-email.js";
import { emailToProto, sandboxMessageToProto } from "./mapping.js";

/** Registers DeliveryService: proto in, use case, proto out. */
export function deliveryRoutes(deps: Deps): (router: ConnectRouter) => void {
  return (router) => {
    router.service(delivery.DeliveryService, {
      async sendEmail(req, ctx) {
        const result = await sendEmail(deps, scopeOf(deps, readCallContext(ctx)), {
          templateSlug: req.templateSlug,
          to: req.to,
          variables: req.variables,
          idempotencyKey: req.idempotencyKey,
          signal: ctx.signal,
        });
        return { email: emailToProto(result.email), replayed: result.replayed };
      },
      async getEmail(req, ctx) {
        return { email: emailToProto(await getEmail(scopeOf(deps, readCallContext(ctx)), req.id)) };
      },
      async listEmails(req, ctx) {
        const page = await listEmails(scopeOf(deps, readCallContext(ctx)), { limit: req.limit, cursor: req.cursor });
        return { emails: page.items.map(emailToProto), nextCursor: page.nextCursor };
      },
      async getSandboxMessage(req, ctx) {
        return { message: sandboxMessageToProto(await getSandboxMessage(scopeOf(deps, readCallContext(ctx)), req.emailId)) };
      },
    });
  };
}
