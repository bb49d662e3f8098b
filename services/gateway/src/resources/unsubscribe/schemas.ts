import { PUBLIC } from "../../openapi/kit.js";
import { RATE_LIMIT_HEADERS, RATE_LIMITED_HEADERS } from "../../openapi/common.js";
import type { ParameterObject, Paths } from "../../openapi/types.js";

// One-click unsubscribe (RFC 8058): the link in a marketing mail's
// `List-Unsubscribe` header. The signed token in the link is the credential;
// it names the tenant, the subscriber and the email, never an address.

/** Longest token accepted (as @emailsvc/tokens refuses beyond it). */
export const UNSUBSCRIBE_TOKEN_MAX_LENGTH = 2048;
/** The form body is one short field; anything larger is not a one-click request. */
export const UNSUBSCRIBE_BODY_LIMIT_BYTES = 1024;
/** The same field as multipart/form-data: a boundary (at most 70 characters, RFC 2046) twice and a part header or two. */
export const UNSUBSCRIBE_MULTIPART_LIMIT_BYTES = 4096;
/** RFC 8058 §3.1: the body a one-click POST carries. */
export const ONE_CLICK_FIELD = "List-Unsubscribe";
export const ONE_CLICK_VALUE = "One-Click";

export const parameters: Record<string, ParameterObject> = {
  UnsubscribeToken: {
    name: "token",
    in: "query",
    required: true,
    description: "The signed token of the link, as minted for one email (JWS, three base64url parts).",
    schema: {
      type: "string",
      minLength: 5,
      maxLength: UNSUBSCRIBE_TOKEN_MAX_LENGTH,
      pattern: "^[A-Za-z0-9_-]+\\.[A-Za-z0-9_-]+\\.[A-Za-z0-9_-]+$",
      "x-pattern-message": "is not a link token",
    },
  },
};

/** The RateLimit headers of the budget closest to exhaustion, once the request was charged (RATE_LIMIT_UNSUBSCRIBE_*). */
const charged = { "X-Request-Id": { $ref: "#/components/headers/RequestId" }, ...RATE_LIMIT_HEADERS };

const html = (description: string) => ({
  description,
  headers: charged,
  content: { "text/html": { schema: { type: "string" } } },
});

/**
 * A problem of these routes: a small page in the subscriber's language for a
 * browser (whatever its Accept, unless it asks for JSON), problem+json for a
 * client that asks for JSON (`Accept: application/json` or
 * `application/problem+json`). The codes are those of the shared response
 * of the same status.
 */
const pageOrProblem = (description: string, headers: Record<string, unknown> = {}) => ({
  description,
  headers: { ...charged, ...headers },
  content: {
    "text/html": { schema: { type: "string" } },
    "application/problem+json": { schema: { $ref: "#/components/schemas/Problem" } },
  },
});

const problems = {
  "400": pageOrProblem(
    "The link is malformed (no token, or no token's shape: `validation_failed` naming `token`): a page says the link is not valid. Or the body is not the one-click form (`validation_failed` naming `List-Unsubscribe`): a page says this address takes only the one-click request, which sending again cannot change. Nothing changed.",
  ),
  "403": pageOrProblem("The link's token does not verify (`invalid_link`): altered, signed with a key no longer accepted, expired, or not an unsubscribe link. A page says so; nothing changed."),
  "429": pageOrProblem(
    "A budget is spent (`rate_limited`): this client address's requests to /unsubscribe (`RATE_LIMIT_UNSUBSCRIBE_ADDRESS`, default 300 per 60 s, wide because mail providers post their users' requests from shared addresses), or a one-click POST's link (`RATE_LIMIT_UNSUBSCRIBE_LINK`, default 5 per 60 s: its first request does the work, repeats change nothing). Checked before any service is asked; nothing changed. A page asks to try again in a few minutes; `Retry-After` says when.",
    RATE_LIMITED_HEADERS,
  ),
  "500": pageOrProblem("An unexpected error (`internal`); a page says nothing changed and to try again."),
};

const oneClickForm = {
  type: "object",
  additionalProperties: false,
  required: [ONE_CLICK_FIELD],
  properties: { [ONE_CLICK_FIELD]: { type: "string", enum: [ONE_CLICK_VALUE] } },
};

export const paths: Paths = {
  "/unsubscribe": {
    get: {
      operationId: "getUnsubscribePage",
      summary: "The confirmation page of an unsubscribe link",
      description:
        "What a person who clicks the link in a mail client sees: a small page with one button, in the subscriber's language (their `locale`, else `Accept-Language`: en, de, fr, it), naming the sender (the portal setting `sender_name`, else the account's name) and saying what the button does: no more marketing email from that sender, from any list; mail they asked for still arrives. A GET never unsubscribes anyone, because mail scanners and link previews follow links with GET.",
      tags: ["Unsubscribe"],
      security: PUBLIC,
      parameters: [{ $ref: "#/components/parameters/UnsubscribeToken" } as unknown as ParameterObject],
      responses: {
        "200": html("The confirmation page; its button posts the one-click request."),
        ...problems,
        "503": pageOrProblem("This gateway has no keys to check links with (`service_unavailable`); retry later."),
      },
    },
    post: {
      operationId: "unsubscribeOneClick",
      summary: "Unsubscribe at once (RFC 8058 one-click)",
      description:
        "What a mail provider posts when its user presses Unsubscribe (`List-Unsubscribe-Post: List-Unsubscribe=One-Click`), as multipart/form-data (what RFC 8058 says senders SHOULD use) or form-encoded, and what the confirmation page's button posts. It does what the preference portal's \"unsubscribe from everything\" does (one operation of the subscribers service): no more marketing email at all. An active subscriber becomes `unsubscribed` and leaves every public tag (private tags, the integrator's segments, stay); a subscriber who is bounced or complained keeps that status, and the opt-out is recorded with it (`subscriber.opted_out`), so that setting them `active` later makes them `unsubscribed`; an address that was no subscriber is kept as an unsubscribed subscriber, so that later marketing mail to it is refused. Repeating it changes nothing. Every change is in the subscriber's audit trail with the actor and source `one_click`. The answer is a page in the subscriber's language saying they are unsubscribed now, or were already.",
      tags: ["Unsubscribe"],
      security: PUBLIC,
      parameters: [{ $ref: "#/components/parameters/UnsubscribeToken" } as unknown as ParameterObject],
      requestBody: {
        required: true,
        content: {
          "multipart/form-data": { schema: oneClickForm },
          "application/x-www-form-urlencoded": { schema: oneClickForm },
        },
      },
      responses: {
        "200": html("Unsubscribed (or already so): a small page says so."),
        ...problems,
        "413": pageOrProblem(`The body is larger than ${UNSUBSCRIBE_BODY_LIMIT_BYTES} bytes (${UNSUBSCRIBE_MULTIPART_LIMIT_BYTES} as multipart/form-data): \`payload_too_large\`. A page says this address takes only the one-click request.`),
        "415": pageOrProblem("The body is neither multipart/form-data nor application/x-www-form-urlencoded: `unsupported_media_type`. A page says this address takes only the one-click request, which sending again cannot change."),
        "503": pageOrProblem("A service is unavailable (`unavailable`, `service_unavailable`); nothing changed, retry later."),
        "504": pageOrProblem("A service did not answer in time (`deadline_exceeded`); retry."),
      },
    },
  },
};
