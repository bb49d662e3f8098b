import { adminResource } from "./admin/index.js";
import { apiKeysResource } from "./api-keys/index.js";
import { membersResource } from "./members/index.js";
import { overviewResource } from "./overview/index.js";
import { sessionResource } from "./session/index.js";
import { passkeysResource } from "./passkeys/index.js";
import { campaignsResource } from "./campaigns/index.js";
import { customDomainResource } from "./custom-domain/index.js";
import { senderDomainsResource } from "./domains/index.js";
import { emailsResource } from "./emails/index.js";
import { formsResource } from "./forms/index.js";
import { importsResource } from "./imports/index.js";
import { providersResource } from "./providers/index.js";
import { preferenceCenterResource } from "./preference-center/index.js";
import type { Resource } from "./resource.js";
import { subscribersResource } from "./subscribers/index.js";
import { suppressionsResource } from "./suppressions/index.js";
import { systemResource } from "./system/index.js";
import { tagsResource } from "./tags/index.js";
import { templatesResource } from "./templates/index.js";
import { triggersResource } from "./triggers/index.js";
import { unsubscribeResource } from "./unsubscribe/index.js";
import { webhooksResource } from "./webhooks/index.js";

export type { Resource, ResourceContext, ServiceName } from "./resource.js";

/**
 * Every resource of the gateway, in the order of the document's tags and of
 * route registration. A new resource is its folder (schemas, routes,
 * mapping, index) plus one line here.
 */
export const RESOURCES: readonly Resource[] = [
  // Before subscribers: its routes under /subscribers/imports must be registered before /subscribers/:id.
  importsResource,
  subscribersResource,
  tagsResource,
  templatesResource,
  emailsResource,
  senderDomainsResource,
  suppressionsResource,
  campaignsResource,
  triggersResource,
  preferenceCenterResource,
  customDomainResource,
  formsResource,
  webhooksResource,
  providersResource,
  unsubscribeResource,
  sessionResource,
  passkeysResource,
  membersResource,
  overviewResource,
  apiKeysResource,
  adminResource,
  systemResource,
];
