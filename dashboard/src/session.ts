// Who is signed in: the member, their role and account, as GET /api/v1/session
// answers. The cookie itself is HttpOnly; this module holds what the API says
// about it and the CSRF token its writes need.

import { useEffect, useState } from "preact/hooks";
import { setCsrfToken } from "./api/client";
import type { components } from "./api/schema";

export type Role = "owner" | "admin" | "developer" | "viewer";
export const ROLES: readonly Role[] = ["owner", "admin", "developer", "viewer"];

/** The signed-in member, their account and the session's CSRF token: GET /api/v1/session's answer. */
export type SessionInfo = components["schemas"]["Session"];

let current: SessionInfo | undefined;
const listeners = new Set<() => void>();

export function getSession(): SessionInfo | undefined {
  return current;
}

export function setSession(next: SessionInfo | undefined): void {
  current = next;
  setCsrfToken(next?.csrf_token ?? "");
  listeners.forEach((l) => l());
}

export function useSession(): SessionInfo | undefined {
  const [value, setValue] = useState(current);
  useEffect(() => {
    const update = () => setValue(current);
    listeners.add(update);
    return () => void listeners.delete(update);
  }, []);
  return value;
}

/**
 * What a role may change, as the API enforces it (the gateway's role table):
 * the dashboard hides what would be refused, the API refuses it anyway.
 * Reading is every role's; developers write keys, webhooks, templates,
 * sending domains and test sends; admins and owners everything (members
 * who are owners: owners only).
 */
export type Area = "keys" | "webhooks" | "templates" | "domains" | "send" | "audience" | "campaigns" | "settings" | "members";
const DEVELOPER_AREAS: ReadonlySet<Area> = new Set(["keys", "webhooks", "templates", "domains", "send"]);

export function canWrite(role: Role | undefined, area: Area): boolean {
  if (role === "owner" || role === "admin") return true;
  if (role === "developer") return DEVELOPER_AREAS.has(area);
  return false;
}

/** The signed-in member's permission to change `area`. */
export function useCanWrite(area: Area): boolean {
  return canWrite(useSession()?.member.role, area);
}
