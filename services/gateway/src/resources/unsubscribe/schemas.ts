import { errors, PUBLIC } from "../../openapi/kit.js";
import type { ParameterObject, Paths } from "../../openapi/types.js";

// One-click unsubscribe (RFC 8058): the link in a marketing mail's
// `List-Unsubscribe` header. The signed token in the link is the credential;
// it names the tenant, the subscriber and the email, never an address.

/** Longest token accepted (as @emailsvc/tokens refuses beyond it). */
export const UNSUBSCRIBE_TOKEN_MAX_LENGTH = 2048;
/** The form body is one short field; anything larger is not a one-click request. */
export const UNSUBSCRIBE_BODY_LIMIT_BYTES = 1024;
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

const html = (description: string) => ({
  description,
  headers: { "X-Request-Id": { $ref: "#/components/headers/RequestId" } },
  content: { "text/html": { schema: { type: "string" } } },
});

const invalidLink = html(
  "The link is not valid: tampered, signed with a key no longer accepted, or expired. A small page says so; nothing changed.",
);

export const paths: Paths = {
  "/unsubscribe": {
    get: {
      operationId: "getUnsubscribePage",
      summary: "The confirmation page of an unsubscribe link",
      description:
        "What a person who clicks the link in a mail client sees: a small page with one button. A GET never unsubscribes anyone, because mail scanners and link previews follow links with GET.",
      tags: ["Unsubscribe"],
      security: PUBLIC,
      parameters: [{ $ref: "#/components/parameters/UnsubscribeToken" } as unknown as ParameterObject],
      responses: {
        "200": html("The confirmation page; its button posts the one-click request."),
        "401": invalidLink,
        ...errors("BadRequest", "InternalError"),
      },
    },
    post: {
      operationId: "unsubscribeOneClick",
      summary: "Unsubscribe at once (RFC 8058 one-click)",
      description:
        "What a mail provider posts when its user presses Unsubscribe (`List-Unsubscribe-Post: List-Unsubscribe=One-Click`), and what the confirmation page's button posts. The recipient's subscriber is set to `unsubscribed` (an address that was no subscriber is kept as an unsubscribed subscriber, so that later marketing mail to it is suppressed); a subscriber who is bounced or complained keeps that status. Repeating it changes nothing. The change is in the subscriber's audit trail with the actor `one_click`.",
      tags: ["Unsubscribe"],
      security: PUBLIC,
      parameters: [{ $ref: "#/components/parameters/UnsubscribeToken" } as unknown as ParameterObject],
      requestBody: {
        required: true,
        content: {
          "application/x-www-form-urlencoded": {
            schema: {
              type: "object",
              additionalProperties: false,
              required: [ONE_CLICK_FIELD],
              properties: { [ONE_CLICK_FIELD]: { type: "string", enum: [ONE_CLICK_VALUE] } },
            },
          },
        },
      },
      responses: {
        "200": html("Unsubscribed (or already so): a small page says so."),
        "401": invalidLink,
        "415": { $ref: "#/components/responses/UnsupportedMediaType" },
        ...errors("BadRequest", "PayloadTooLarge", "InternalError", "Unavailable", "Timeout"),
      },
    },
  },
};
