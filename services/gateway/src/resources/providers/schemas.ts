import { PUBLIC } from "../../openapi/kit.js";
import { RATE_LIMIT_HEADERS } from "../../openapi/common.js";
import type { Paths } from "../../openapi/types.js";

// A provider's notifications about mail it took: Amazon SES's bounces,
// complaints and deliveries, posted by SNS. No API key: the SNS signature is
// the credential (checked by the delivery service), and the topic must be one
// of SES_NOTIFICATION_TOPIC_ARNS.

/** SES's notifications are a few KiB (a bounce naming many recipients some tens); SNS messages are at most 256 KiB. */
export const SES_NOTIFICATION_BODY_LIMIT_BYTES = 256 * 1024;

const charged = { "X-Request-Id": { $ref: "#/components/headers/RequestId" }, ...RATE_LIMIT_HEADERS };

export const paths: Paths = {
  "/api/v1/providers/ses/notifications": {
    post: {
      operationId: "takeSesNotification",
      summary: "Take Amazon SES's notifications through SNS",
      description:
        "Where an SNS topic that SES publishes a configuration set's events to (Bounce, Complaint, Delivery) is subscribed over HTTPS. No API key: the SNS signature is verified (SignatureVersion 1 or 2, the certificate fetched only from `https://sns.<region>.amazonaws.com/`), and the message's `TopicArn` must be one of `SES_NOTIFICATION_TOPIC_ARNS` (unset: 404 `provider_notifications_disabled`). A `SubscriptionConfirmation` is confirmed by visiting its `SubscribeURL`. A `Notification` names its email by SES's MessageId (the email's `provider_message_id`) and counts only for the email's own recipient: a Delivery moves a `sent` email to `delivered`; a Bounce to `bounced`, hard when SES says Permanent (the address is suppressed and the subscriber bounced), soft when Transient; a Complaint to `complained` (the address suppressed). Each change is in the email's history and sends its webhook. SNS redelivers: a repeat changes nothing. Anything else signed and allowed (an email not kept here, another event type) is answered 200 and changes nothing. Charged per client address (`RATE_LIMIT_PROVIDER_NOTIFICATIONS`, default 600 per 60 s) before the body is read. The body is at most 256 KiB.",
      tags: ["Providers"],
      security: PUBLIC,
      requestBody: {
        required: true,
        content: {
          // SNS posts its JSON as text/plain; the body is read as bytes whatever the Content-Type says.
          "text/plain": {
            schema: {
              type: "string",
              description:
                "An SNS message as SNS posts it (JSON): `Type` (Notification, SubscriptionConfirmation or UnsubscribeConfirmation), `MessageId`, `TopicArn`, `Message` (for a Notification, SES's event as JSON text), `Timestamp`, `SignatureVersion`, `Signature`, `SigningCertURL`, and `SubscribeURL` with `Token` for a confirmation.",
            },
          },
        },
      },
      responses: {
        "200": {
          description: "Taken: `outcome` says what became of it.",
          headers: charged,
          content: {
            "application/json": {
              schema: {
                type: "object",
                additionalProperties: false,
                required: ["outcome"],
                properties: { outcome: { type: "string", enum: ["applied", "unchanged", "subscription_confirmed", "ignored"] } },
              },
            },
          },
        },
        "400": { $ref: "#/components/responses/BadRequest" },
        "403": { $ref: "#/components/responses/Forbidden" },
        "404": { $ref: "#/components/responses/NotFound" },
        "413": { $ref: "#/components/responses/PayloadTooLarge" },
        "429": { $ref: "#/components/responses/TooManyRequests" },
        "500": { $ref: "#/components/responses/InternalError" },
        "503": { $ref: "#/components/responses/Unavailable" },
        "504": { $ref: "#/components/responses/Timeout" },
      },
    },
  },
};
