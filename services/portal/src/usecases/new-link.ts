import { Code, ConnectError } from "@connectrpc/connect";
import type { Logger } from "@emailsvc/telemetry";
import type { CallContext } from "@emailsvc/tenancy";
import type { LinkMailer, SubscriberDirectory } from "../rpc/clients.js";

/** How long a repeated request for a new link counts as the same one (a double submit sends one mail). */
const SAME_REQUEST_MS = 10 * 60 * 1000;

export interface NewLinkDeps {
  subscribers: SubscriberDirectory;
  mailer: LinkMailer;
  logger: Logger;
  now: () => number;
}

/**
 * "Send me a new link": mails a fresh preference link to `email` if it is a
 * subscriber of the tenant (the link goes to their own mailbox, so the asker
 * learns nothing they could not read there). The caller answers the same
 * whatever happens here, and does not wait for it: neither the answer nor its
 * timing tells whether the address is known. Failures are logged by ids only.
 */
export async function mailNewLink(deps: NewLinkDeps, call: CallContext, email: string): Promise<void> {
  try {
    const subscriber = await deps.subscribers.byEmail(call, email);
    if (!subscriber) return;
    await deps.mailer.send(call, subscriber.email, `preference-link:${subscriber.id}:${Math.floor(deps.now() / SAME_REQUEST_MS)}`);
    deps.logger.info({ account_id: call.tenant.accountId, mode: call.tenant.mode, subscriber_id: subscriber.id }, "new preference link mailed");
  } catch (err) {
    deps.logger.warn(
      { account_id: call.tenant.accountId, mode: call.tenant.mode, code: Code[ConnectError.from(err).code] },
      "a new preference link could not be mailed",
    );
  }
}
