// Every page of the dashboard: its path under /dashboard and its module,
// loaded on the first visit (a chunk of its own, so the first page stays
// small). A new page is its file under pages/ plus one line here (and one in
// NAV if the navigation names it).

import type { ComponentType } from "preact";
import type { MessageKey } from "./i18n";

export interface PageProps {
  params: Record<string, string>;
}

export interface RouteDef {
  path: string;
  load: () => Promise<{ default: ComponentType<PageProps> }>;
  /** Reachable signed out (sign-in, invitations, password reset). */
  public?: boolean;
}

export const ROUTES: readonly RouteDef[] = [
  { path: "/sign-in", load: () => import("./pages/sign-in"), public: true },
  { path: "/forgot-password", load: () => import("./pages/forgot-password"), public: true },
  { path: "/reset-password", load: () => import("./pages/reset-password"), public: true },
  { path: "/accept", load: () => import("./pages/accept"), public: true },
  { path: "/setup", load: () => import("./pages/accept"), public: true },
  { path: "/", load: () => import("./pages/overview") },
  { path: "/profile", load: () => import("./pages/profile") },
  { path: "/api-keys", load: () => import("./pages/api-keys") },
  { path: "/settings/preference-center", load: () => import("./pages/preference-center") },
  { path: "/members", load: () => import("./pages/members") },
  { path: "/audit-log", load: () => import("./pages/audit-log") },
  { path: "/subscribers", load: () => import("./pages/subscribers/list") },
  { path: "/subscribers/new", load: () => import("./pages/subscribers/new") },
  { path: "/subscribers/import", load: () => import("./pages/subscribers/import") },
  { path: "/subscribers/:id", load: () => import("./pages/subscribers/detail") },
  { path: "/tags", load: () => import("./pages/tags/list") },
  { path: "/tags/new", load: () => import("./pages/tags/edit") },
  { path: "/tags/:id", load: () => import("./pages/tags/edit") },
  { path: "/sending-domains", load: () => import("./pages/sending-domains/list") },
  { path: "/sending-domains/:id", load: () => import("./pages/sending-domains/detail") },
  { path: "/suppressions", load: () => import("./pages/suppressions") },
  { path: "/webhooks", load: () => import("./pages/webhooks/list") },
  { path: "/webhooks/:id", load: () => import("./pages/webhooks/detail") },
  { path: "/templates", load: () => import("./pages/templates/list") },
  { path: "/templates/new", load: () => import("./pages/templates/editor") },
  { path: "/templates/:id", load: () => import("./pages/templates/editor") },
  { path: "/templates/:id/versions/:version", load: () => import("./pages/templates/version") },
  { path: "/campaigns", load: () => import("./pages/campaigns/list") },
  { path: "/campaigns/new", load: () => import("./pages/campaigns/new") },
  { path: "/campaigns/:id", load: () => import("./pages/campaigns/detail") },
  { path: "/triggers", load: () => import("./pages/triggers/list") },
  { path: "/triggers/new", load: () => import("./pages/triggers/editor") },
  { path: "/triggers/:id", load: () => import("./pages/triggers/editor") },
  { path: "/emails", load: () => import("./pages/emails/list") },
  { path: "/emails/:id", load: () => import("./pages/emails/detail") },
];

export interface NavItem {
  path: string;
  label: MessageKey;
}

export interface NavSection {
  label: MessageKey;
  items: NavItem[];
}

/** The navigation, by section. An item is current for its path and the paths below it. */
export const NAV: readonly NavSection[] = [
  {
    label: "nav.section.email",
    items: [
      { path: "/", label: "nav.overview" },
      { path: "/subscribers", label: "nav.subscribers" },
      { path: "/tags", label: "nav.tags" },
      { path: "/templates", label: "nav.templates" },
      { path: "/campaigns", label: "nav.campaigns" },
      { path: "/triggers", label: "nav.triggers" },
      { path: "/emails", label: "nav.emails" },
    ],
  },
  {
    label: "nav.section.deliverability",
    items: [
      { path: "/sending-domains", label: "nav.sendingDomains" },
      { path: "/suppressions", label: "nav.suppressions" },
      { path: "/webhooks", label: "nav.webhooks" },
    ],
  },
  {
    label: "nav.section.settings",
    items: [
      { path: "/api-keys", label: "nav.apiKeys" },
      { path: "/settings/preference-center", label: "nav.preferenceCenter" },
      { path: "/members", label: "nav.members" },
      { path: "/audit-log", label: "nav.auditLog" },
    ],
  },
];
