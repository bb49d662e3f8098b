// The sign-in calls of the dashboard (the session, invitations, password
// resets), through the generated client like every other call. A session's
// answer carries the CSRF token, which session.ts hands to the client.

import { api, ok } from "./client";
import type { SessionInfo } from "../session";

export const sessionApi = {
  current: (): Promise<SessionInfo> => ok(api.GET("/api/v1/session")),
  signIn: (email: string, password: string): Promise<SessionInfo> => ok(api.POST("/api/v1/session", { body: { email, password } })),
  signOut: (): Promise<unknown> => ok(api.DELETE("/api/v1/session")),
  signOutEverywhere: (): Promise<unknown> => ok(api.DELETE("/api/v1/sessions")),
  accept: (body: { token: string; name: string; password: string; email?: string }): Promise<SessionInfo> => ok(api.POST("/api/v1/invitations/accept", { body })),
  requestReset: (email: string): Promise<unknown> => ok(api.POST("/api/v1/password-resets", { body: { email } })),
  completeReset: (token: string, password: string): Promise<unknown> => ok(api.POST("/api/v1/password-resets/complete", { body: { token, password } })),
};
