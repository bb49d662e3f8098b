// Dashboard members for tests: made through the operator's invitation and
// the public accept call (as a new member would), signed in through the API,
// and calls with the session cookie checked against the served OpenAPI
// document like `t.call`. Browser tests set the cookie in their context
// (browserSignIn) and skip the sign-in form.

import type { BrowserContext } from "playwright-core";
import type { OpenApiDocument } from "../../../services/gateway/src/openapi";
import { responseChecker, sendChecked, type TestResponse } from "../../../services/gateway/test/support/harness";
import type { TestPlatform } from "./platform-client";

export type Role = "owner" | "admin" | "developer" | "viewer";

export interface MemberCredentials {
  email: string;
  password: string;
  memberId: string;
}

export interface DashboardSession {
  /** The cookie as a `Cookie` header value (`emailsvc_session=…`). */
  cookie: string;
  /** The session's CSRF token, for X-CSRF-Token. */
  csrf: string;
  /** The cookie's name and value. */
  name: string;
  value: string;
}

export interface SessionCallOptions {
  body?: unknown;
  /** Default "live". */
  mode?: "live" | "test";
  headers?: Record<string, string>;
  /** Leave out X-CSRF-Token (default: sent on every call). */
  noCsrf?: boolean;
}

const checkers = new WeakMap<TestPlatform, Promise<ReturnType<typeof responseChecker>>>();

function checkerOf(t: TestPlatform) {
  let checker = checkers.get(t);
  if (!checker) {
    checker = fetch(`${t.url}/api/v1/openapi.json`)
      .then((res) => res.json())
      .then((doc) => responseChecker(doc as OpenApiDocument));
    checkers.set(t, checker);
  }
  return checker;
}

let counter = 0;

/** A request to the platform with no credential, checked against the document. */
export async function publicCall(t: TestPlatform, method: string, path: string, body?: unknown, headers: Record<string, string> = {}): Promise<TestResponse> {
  const init = body === undefined ? { headers } : { headers: { "content-type": "application/json", ...headers }, body: JSON.stringify(body) };
  return sendChecked(await checkerOf(t), t.url, method, path, init);
}

/** The session cookie a response set. */
export function sessionCookieOf(res: TestResponse): { name: string; value: string } {
  const header = res.headers.get("set-cookie") ?? "";
  const match = /^([^=;]+)=([^;]*)/.exec(header);
  if (!match) throw new Error(`no session cookie in the answer (${res.status}): ${header}`);
  return { name: match[1]!, value: match[2]! };
}

/**
 * A new member of the test account with `role`: an invitation through the
 * operator's API, accepted through the public call with a name and a password.
 */
export async function createMember(t: TestPlatform, role: Role, email = `${role}-${Date.now().toString(36)}-${counter++}@example.com`): Promise<MemberCredentials> {
  const invited = await t.call("POST", `/admin/v1/accounts/${t.accountId}/invitations`, { admin: true, body: { email, role } });
  if (invited.status !== 201) throw new Error(`invitation refused: ${invited.status} ${invited.text}`);
  const token = new URL(invited.body.url as string).hash.replace(/^#token=/, "");
  const password = `pw-${role}-${Math.random().toString(36).slice(2)}-long`;
  const accepted = await publicCall(t, "POST", "/api/v1/invitations/accept", { token, name: `Test ${role}`, password });
  if (accepted.status !== 201) throw new Error(`accept refused: ${accepted.status} ${accepted.text}`);
  return { email, password, memberId: accepted.body.member.id as string };
}

/** Signs in through POST /api/v1/session. */
export async function signIn(t: TestPlatform, creds: { email: string; password: string }): Promise<DashboardSession> {
  const res = await publicCall(t, "POST", "/api/v1/session", { email: creds.email, password: creds.password });
  if (res.status !== 201) throw new Error(`sign-in refused: ${res.status} ${res.text}`);
  const { name, value } = sessionCookieOf(res);
  return { cookie: `${name}=${value}`, csrf: res.body.csrf_token as string, name, value };
}

/** A call with the session cookie (and its CSRF token and X-Mode), checked against the document. */
export async function sessionCall(t: TestPlatform, session: DashboardSession, method: string, path: string, opts: SessionCallOptions = {}): Promise<TestResponse> {
  const headers: Record<string, string> = { cookie: session.cookie, "x-mode": opts.mode ?? "live" };
  if (!opts.noCsrf) headers["x-csrf-token"] = session.csrf;
  let body: string | undefined;
  if (opts.body !== undefined) {
    body = JSON.stringify(opts.body);
    headers["content-type"] = "application/json";
  }
  Object.assign(headers, opts.headers);
  return sendChecked(await checkerOf(t), t.url, method, path, { headers, body });
}

/** Signs in and puts the session cookie in a Playwright context, as the sign-in form would leave it. */
export async function browserSignIn(context: BrowserContext, t: TestPlatform, creds: { email: string; password: string }): Promise<DashboardSession> {
  const session = await signIn(t, creds);
  await context.addCookies([{ name: session.name, value: session.value, url: t.url, httpOnly: true, sameSite: "Strict" }]);
  return session;
}
