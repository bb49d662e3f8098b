// An in-memory stand-in for the portal's PreferenceCenterService, served over
// createRouterTransport, for the gateway's tests of the preference-center
// routes (tokens, budgets): every subscriber of a token exists, holds no tag,
// and exports an empty part from every service; every answer carries the
// RateLimit headers of a subscriber's read budget, as the portal's do. The real one is tested end
// to end in embedded/test/preference-center.test.ts.

import type { ConnectRouter, HandlerContext } from "@connectrpc/connect";
import type { CallContext } from "@emailsvc/tenancy";
import { health, MailingBlock, portal, SubscriberStatus } from "@emailsvc/proto";
import { FakeService } from "./fake-service";

export class FakePortal extends FakeService<Record<string, never>> {
  protected newTenant(): Record<string, never> {
    return {};
  }

  /** What the portal's budgets (usecases/budgets.ts) put in the answer's metadata. */
  private static readonly RATE_LIMIT_METADATA: Record<string, string> = {
    "ratelimit-limit": "60",
    "ratelimit-remaining": "59",
    "ratelimit-reset": "1",
    "ratelimit-policy": '60;w=60;comment="read per subscriber", 100;w=1;comment="preference read per account and mode"',
  };

  protected override async handle<T>(method: string, ctx: HandlerContext, work: (tenant: Record<string, never>, call: CallContext, key: string) => T): Promise<T> {
    const result = await super.handle(method, ctx, work);
    for (const [name, value] of Object.entries(FakePortal.RATE_LIMIT_METADATA)) ctx.responseHeader.set(name, value);
    return result;
  }

  routes(): (router: ConnectRouter) => void {
    const preferences = (subscriberId: string) => ({
      preferences: {
        subscriberId,
        email: "someone@example.com",
        status: SubscriberStatus.ACTIVE,
        subscribedTags: [],
        availableTags: [],
        locale: "",
        mailability: { marketing: MailingBlock.UNSPECIFIED, transactional: MailingBlock.UNSPECIFIED },
      },
    });
    return (router) => {
      router.service(portal.PreferenceCenterService, {
        getPreferences: (req, ctx) => this.handle("getPreferences", ctx, () => preferences(req.subscriberId)),
        subscribeTag: (req, ctx) => this.handle("subscribeTag", ctx, () => preferences(req.subscriberId)),
        unsubscribeTag: (req, ctx) => this.handle("unsubscribeTag", ctx, () => preferences(req.subscriberId)),
        unsubscribeAll: (req, ctx) => this.handle("unsubscribeAll", ctx, () => preferences(req.subscriberId)),
        setLocale: (req, ctx) => this.handle("setLocale", ctx, () => preferences(req.subscriberId)),
        exportData: (req, ctx) =>
          this.handle("exportData", ctx, () => ({
            json: JSON.stringify({
              export: { format_version: 1, generated_at: "2026-11-22T10:00:00Z", subscriber_id: req.subscriberId },
              profile: {},
              tags: [],
              audit_trail: [],
              consent: [],
              emails: [],
              campaign_memberships: [],
              trigger_sends: [],
              about_this_data: {},
            }),
          })),
        eraseAccount: (_req, ctx) => this.handle("eraseAccount", ctx, () => ({})),
      });
      router.service(health.Health, this.healthImpl());
    };
  }
}
