import { create } from "@bufbuild/protobuf";
import type { ConnectRouter } from "@connectrpc/connect";
import { portal } from "@emailsvc/proto";
import { invalid, isId, readCallContext } from "@emailsvc/runtime";
import {
  eraseAccount,
  getPreferences,
  subscribeTag,
  unsubscribeAll,
  unsubscribeTag,
  type PortalCall,
  type PortalDeps,
  type PreferencesView,
} from "../usecases/preferences.js";


function preferencesToProto(view: PreferencesView): portal.Preferences {
  return create(portal.PreferencesSchema, {
    subscriberId: view.subscriberId,
    email: view.email,
    status: view.status,
    subscribedTags: view.subscribedTags,
    availableTags: view.availableTags,
  });
}

function checkedId(value: string, prefix: string, field: string): string {
  if (!isId(prefix, value)) throw invalid(`${field} is not a valid id`, [{ field, description: "not a valid id" }]);
  return value;
}

/** Registers PreferenceCenterService: proto in, use case, proto out. The actor of every change is `portal`. */
export function preferenceCenterRoutes(deps: PortalDeps): (router: ConnectRouter) => void {
  return (router) => {
    const portalCall = (
      subscriberId: string,
      ctx: Parameters<typeof readCallContext>[0],
      client?: { ip: string; userAgent: string },
    ): PortalCall => ({
      call: { ...readCallContext(ctx), actor: "portal" },
      subscriberId: checkedId(subscriberId, "sub", "subscriber_id"),
      client: { ip: (client?.ip ?? "").slice(0, 64), userAgent: (client?.userAgent ?? "").slice(0, 512) },
    });
    router.service(portal.PreferenceCenterService, {
      async getPreferences(req, ctx) {
        return { preferences: preferencesToProto(await getPreferences(deps, portalCall(req.subscriberId, ctx))) };
      },
      async subscribeTag(req, ctx) {
        const view = await subscribeTag(deps, portalCall(req.subscriberId, ctx, req.client), checkedId(req.tagId, "tag", "tag_id"));
        return { preferences: preferencesToProto(view) };
      },
      async unsubscribeTag(req, ctx) {
        const view = await unsubscribeTag(deps, portalCall(req.subscriberId, ctx, req.client), checkedId(req.tagId, "tag", "tag_id"));
        return { preferences: preferencesToProto(view) };
      },
      async unsubscribeAll(req, ctx) {
        return { preferences: preferencesToProto(await unsubscribeAll(deps, portalCall(req.subscriberId, ctx, req.client))) };
      },
      async eraseAccount(req, ctx) {
        await eraseAccount(deps, portalCall(req.subscriberId, ctx, req.client));
        return {};
      },
    });
  };
}
