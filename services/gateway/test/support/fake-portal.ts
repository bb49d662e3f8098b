// An in-memory stand-in for the portal's PreferenceCenterService, served over
// createRouterTransport, for the gateway's tests of the preference-center
// routes (tokens, budgets): every subscriber of a token exists, holds no tag,
// and exports an empty part from every service. The real one is tested end
// to end in embedded/test/preference-center.test.ts.

import type { ConnectRouter } from "@connectrpc/connect";
import { health, portal, SubscriberStatus } from "@emailsvc/proto";
import { FakeService } from "./fake-service";

export class FakePortal extends FakeService<Record<string, never>> {
  protected newTenant(): Record<string, never> {
    return {};
  }

  routes(): (router: ConnectRouter) => void {
    const preferences = (subscriberId: string) => ({
      preferences: { subscriberId, email: "someone@example.com", status: SubscriberStatus.ACTIVE, subscribedTags: [], availableTags: [], locale: "" },
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
