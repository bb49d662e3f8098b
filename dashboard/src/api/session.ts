// The sign-in calls of the dashboard (POST/GET/DELETE /api/v1/session, the
// invitation and password-reset calls).
// LEAD: switch to `api` once the members branch's operations are in schema.d.ts.

import { ApiProblem, toProblem } from "./client";
import type { SessionInfo } from "../session";
import { currentMode } from "./client";

let csrf = "";

async function call<T>(method: string, path: string, body?: unknown): Promise<T> {
  let response: Response;
  try {
    response = await fetch(path, {
      method,
      credentials: "same-origin",
      headers: { ...(body !== undefined ? { "content-type": "application/json" } : {}), "x-mode": currentMode(), ...(method !== "GET" && csrf ? { "x-csrf-token": csrf } : {}) },
      ...(body !== undefined ? { body: JSON.stringify(body) } : {}),
    });
  } catch (err) {
    throw new ApiProblem(0, "network_error", err instanceof Error ? err.message : String(err));
  }
  const text = await response.text();
  const parsed: unknown = text ? JSON.parse(text) : undefined;
  if (!response.ok) throw toProblem(response, parsed);
  return parsed as T;
}

function remember(info: SessionInfo): SessionInfo {
  csrf = info.csrf_token;
  return info;
}

export const sessionApi = {
  current: async () => remember(await call<SessionInfo>("GET", "/api/v1/session")),
  signIn: async (email: string, password: string) => remember(await call<SessionInfo>("POST", "/api/v1/session", { email, password })),
  signOut: () => call<void>("DELETE", "/api/v1/session"),
  signOutEverywhere: () => call<void>("DELETE", "/api/v1/sessions"),
  accept: async (body: { token: string; name: string; password: string; email?: string }) => remember(await call<SessionInfo>("POST", "/api/v1/invitations/accept", body)),
  requestReset: (email: string) => call<void>("POST", "/api/v1/password-resets", { email }),
  completeReset: (token: string, password: string) => call<void>("POST", "/api/v1/password-resets/complete", { token, password }),
};
