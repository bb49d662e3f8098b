// Every `code` a problem+json answer of the gateway can carry, with its HTTP
// status and its title, in one table. Throw sites name a code of this table
// (the compiler refuses another), the status follows from it, and the OpenAPI
// document lists each status's codes from it (openapi/common.ts). Codes that
// services raise (AppError) pass through the gateway: they are here too, with
// the status their kind maps to, and test/error-codes.test.ts checks every
// AppError code in services/ and packages/ against this table.
//
// RFC 9457: the title is fixed per type (`urn:emailsvc:problem:<code>`), the
// detail says what happened this time.

/** What a code means to a client: its status, its fixed title, and when it is answered (for the document). */
export interface ErrorCodeEntry {
  status: number;
  title: string;
  /** One line for the OpenAPI document's error descriptions. */
  when: string;
}

export const ERROR_CODES = {
  // 400: the request is wrong (the edge, or a service's verdict on a value).
  validation_failed: { status: 400, title: "Invalid request", when: "a field, parameter or header breaks the document's rules; `errors` names each field" },
  invalid_json: { status: 400, title: "Malformed JSON body", when: "the body is not UTF-8 JSON, is empty, or has a key `__proto__`" },
  json_too_deep: { status: 400, title: "JSON nested too deeply", when: "the body nests arrays and objects more than 32 levels deep" },
  bad_request: { status: 400, title: "Bad request", when: "the HTTP request itself is malformed" },
  unknown_tags: { status: 400, title: "Unknown tags", when: "a tag filter names tags that do not exist" },
  tag_not_public: { status: 400, title: "Tag not public", when: "a signup asks for a tag that is not a public tag of the account (or no tag of it); nothing was stored" },
  invalid_mjml: { status: 400, title: "Invalid MJML", when: "`mjml_content` does not compile; `errors` names the lines" },
  invalid_template: { status: 400, title: "Invalid template", when: "the template's subject or body breaks the template language" },
  template_exceeds_limits: { status: 400, title: "Template exceeds limits", when: "the template nests or repeats more than the template limits allow" },
  webhook_url_forbidden: { status: 400, title: "Webhook URL not allowed", when: "the webhook URL names a loopback, private, link-local, metadata or otherwise reserved address" },
  invalid_domain: { status: 400, title: "Invalid domain", when: "the custom domain is not one a certificate can be issued for" },
  invalid_sender_domain: { status: 400, title: "Invalid sending domain", when: "the sending domain is not a host name of a public domain (an IP address, `localhost`, a public suffix, the platform's own)" },
  import_empty: { status: 400, title: "Import file empty", when: "an import's body is empty; no job was left waiting" },
  sns_message_malformed: { status: 400, title: "Not an SNS message", when: "the body of a provider notification is not an SNS message with the fields its type is signed over; nothing changed" },
  invalid_token: { status: 400, title: "Link not valid", when: "an invitation's or password reset's token is unknown, used or expired (one answer for the three); ask for a new link" },
  invalid_passkey_registration: { status: 400, title: "Passkey not registered", when: "the authenticator's answer does not verify (origin, relying party id, signature), or its options' challenge is unknown, used, expired or of another session" },
  // 401: no or invalid credentials.
  missing_api_key: { status: 401, title: "API key required", when: "no `X-API-Key` header" },
  invalid_api_key: { status: 401, title: "Invalid API key", when: "the API key is unknown or revoked" },
  missing_admin_token: { status: 401, title: "Admin token required", when: "no `Authorization: Bearer` admin token" },
  invalid_admin_token: { status: 401, title: "Invalid admin token", when: "the admin token is wrong" },
  missing_preference_token: { status: 401, title: "Preference token required", when: "no `Authorization: Bearer` preference token" },
  invalid_preference_token: { status: 401, title: "Invalid preference token", when: "the preference token is expired, altered, of another purpose, or its subscriber was erased" },
  unauthenticated: { status: 401, title: "Not authenticated", when: "a service refused the call's credentials" },
  invalid_credentials: { status: 401, title: "Wrong email or password", when: "a dashboard sign-in names no member or the wrong password (one answer for both)" },
  passkey_not_accepted: { status: 401, title: "Passkey not accepted", when: "a passkey sign-in names an unknown or removed passkey or a removed member, answers a used or expired challenge, comes from another origin, or its signature or counter fails (one answer for all)" },
  missing_session: { status: 401, title: "Sign-in required", when: "no session cookie, on an operation that takes a dashboard session (POST /api/v1/session signs in)" },
  invalid_session: { status: 401, title: "Session ended", when: "the session cookie is unknown, signed out, expired, or its member was removed" },
  // 403: valid credentials, not allowed.
  forbidden: { status: 403, title: "Forbidden", when: "a service refused the operation to this credential" },
  csrf_failed: { status: 403, title: "CSRF token missing or wrong", when: "a change made with the session cookie lacks the session's `X-CSRF-Token`, or sends another" },
  role_forbidden: { status: 403, title: "Role does not allow this", when: "the member's role may not do this; the detail names the role needed" },
  test_mode_campaign_too_large: { status: 403, title: "Campaign too large for test mode", when: "a test-mode campaign has more recipients than `TEST_MODE_DAILY_LIMIT` allows in a day" },
  plan_required: { status: 403, title: "Plan does not include this", when: "the account's plan lacks the feature; the detail names the plan needed" },
  live_key_required: { status: 403, title: "Live-mode key required", when: "the change needs a live-mode key" },
  invalid_link: { status: 403, title: "Link not valid", when: "an unsubscribe link's token is expired, altered or of another purpose" },
  sns_signature_invalid: { status: 403, title: "SNS signature not valid", when: "the SNS message's signature does not verify against an SNS certificate; nothing changed" },
  sns_topic_not_allowed: { status: 403, title: "SNS topic not allowed", when: "the SNS message's TopicArn is not one of `SES_NOTIFICATION_TOPIC_ARNS`; nothing changed" },
  // 404.
  not_found: { status: 404, title: "Not found", when: "no such resource (also for ids of another account or mode), or no such route" },
  tag_not_found: { status: 404, title: "Tag not found", when: "no such tag (for a subscriber: no public tag)" },
  template_not_found: { status: 404, title: "Template not found", when: "no template has this id or slug" },
  sandbox_message_expired: { status: 404, title: "Sandboxed message no longer kept", when: "the sandboxed message is past its retention (`SANDBOX_RETENTION_HOURS`) or its tenant's cap (`SANDBOX_MAX_MESSAGES_PER_TENANT`)" },
  sandbox_message_not_found: { status: 404, title: "No sandboxed message", when: "the email was not sandboxed (an erased one is `sandbox_message_expired`)" },
  custom_domain_not_found: { status: 404, title: "No custom domain", when: "the account has no custom domain" },
  form_not_found: { status: 404, title: "Signup form not found", when: "no signup form has this id (in this account and mode)" },
  sender_domain_not_found: { status: 404, title: "Sending domain not found", when: "no sending domain has this id (in this account and mode)" },
  provider_notifications_disabled: { status: 404, title: "Provider notifications not enabled", when: "this platform takes no SES notifications (`SES_NOTIFICATION_TOPIC_ARNS` is not set)" },
  // 405.
  method_not_allowed: { status: 405, title: "Method not allowed", when: "the path does not take this method; see `Allow`" },
  // 409: the state of the resource does not allow it.
  conflict: { status: 409, title: "Conflict", when: "a service refused a change that clashes with what exists" },
  passkey_exists: { status: 409, title: "Passkey registered already", when: "the authenticator's credential is registered already (by this or another member)" },
  email_taken: { status: 409, title: "Email address already in use", when: "another subscriber has this address; `existing_id` names it" },
  subscriber_suppressed: { status: 409, title: "Email address suppressed after an erasure", when: "the address was erased at its owner's request; create it with `resubscribe` only if the person opted in again" },
  tag_name_taken: { status: 409, title: "Tag name already in use", when: "another tag has this name; `existing_id` names it" },
  slug_taken: { status: 409, title: "Slug already in use", when: "another template has this slug; `existing_id` names it" },
  sender_domain_exists: { status: 409, title: "Sending domain already added", when: "the account (in this mode) has this sending domain already; `existing_id` names it" },
  concurrent_update: { status: 409, title: "Concurrent update", when: "another change won; read again and retry" },
  idempotency_key_reused: { status: 409, title: "Idempotency key reused", when: "the idempotency key was used before with another body" },
  domain_taken: { status: 409, title: "Domain already claimed", when: "another account holds this custom domain" },
  campaign_not_draft: { status: 409, title: "Campaign is not a draft", when: "only a draft campaign can be changed, deleted or sent" },
  campaign_state_conflict: { status: 409, title: "Campaign state does not allow this", when: "the campaign's state does not allow the pause, resume or cancel" },
  form_limit_reached: { status: 409, title: "Too many signup forms", when: "the account (and mode) has the most signup forms it may have (100); delete one first" },
  webhook_limit_reached: { status: 409, title: "Too many webhook endpoints", when: "the account (and mode) has the most webhook endpoints it may have; delete one first" },
  import_not_uploading: { status: 409, title: "Import not uploading", when: "the import took its whole upload already (or failed): it takes no more chunks" },
  import_incomplete: { status: 409, title: "Import upload incomplete", when: "chunks of the import's upload are missing" },
  template_in_use: { status: 409, title: "Template in use", when: "triggers or unfinished campaigns use the template (the detail names them); nothing was deleted" },
  member_exists: { status: 409, title: "Already a member", when: "the email address is a member already (of this or another account: an address is one member of one account)" },
  last_owner: { status: 409, title: "Last owner", when: "the change would leave the account without an owner; make another member owner first" },
  // 422: well-formed, but the account's state does not allow it.
  unprocessable: { status: 422, title: "Unprocessable request", when: "a service refused the request in the account's present state" },
  not_pending: { status: 422, title: "Subscriber not pending", when: "a confirmation of a subscriber that is not waiting for one (confirmed already, or unsubscribed since)" },
  from_domain_not_verified: { status: 422, title: "From domain not verified", when: "a live-mode send's From is not on a verified sending domain of the account (the detail names the domain); nothing was stored" },
  // 413: too large.
  payload_too_large: { status: 413, title: "Request body too large", when: "the body is larger than the operation takes" },
  metadata_too_large: { status: 413, title: "Metadata too large", when: "metadata is larger than 8 KiB as JSON" },
  variables_too_large: { status: 413, title: "Variables too large", when: "variables are larger than the service takes" },
  mjml_too_large: { status: 413, title: "MJML too large", when: "`mjml_content` is larger than 512 KiB" },
  render_too_large: { status: 413, title: "Rendered message too large", when: "the rendered message exceeds the render budget" },
  batch_exceeds_rate_limit: { status: 413, title: "Batch larger than the send budget", when: "a batch has more messages than the `send` budgets of the key or the account admit at once (each message counts one); nothing was sent: split it" },
  import_too_large: { status: 413, title: "Import too large", when: "an import's file is larger than 1 GiB" },
  export_too_large: { status: 413, title: "Export too large", when: "a service's part of the export exceeds its bound" },
  // 415.
  unsupported_media_type: { status: 415, title: "Unsupported content type", when: "the body is not of the operation's media type" },
  // 429.
  rate_limited: { status: 429, title: "Too many requests", when: "a budget is spent; the detail names it, `Retry-After` says when to retry" },
  test_mode_quota_exceeded: { status: 429, title: "Test-mode quota used up", when: "the account's test-mode messages of the last 24 hours reached `TEST_MODE_DAILY_LIMIT`; `Retry-After` says when one is free again" },
  // 499: the client went away before the answer (nginx's "client closed
  // request"); never received by anyone, it is what logs and metrics say
  // instead of a 500, because a client that hangs up is no server error.
  client_closed_request: { status: 499, title: "Client closed request", when: "the client closed the connection before the request was read or answered (logs and metrics only)" },
  // 500.
  internal: { status: 500, title: "Internal error", when: "an unexpected error; the request id finds it in the logs" },
  // 503.
  unavailable: { status: 503, title: "Service unavailable", when: "a service behind the gateway is unavailable; retry later" },
  service_unavailable: { status: 503, title: "Service not available", when: "this gateway is not connected to the service (or the setting) the operation needs" },
  not_ready: { status: 503, title: "Not ready", when: "the gateway is not ready (a service or its store is down, or it is stopping)" },
  busy: { status: 503, title: "Service busy", when: "a service has too much work queued; retry shortly" },
  shutting_down: { status: 503, title: "Service shutting down", when: "a service is stopping; retry" },
  export_incomplete: { status: 503, title: "Export incomplete", when: "a service did not answer its part of the export" },
  dns_lookup_failed: { status: 503, title: "DNS lookup failed", when: "the DNS did not answer the lookups of a sending domain's records; nothing changed, retry" },
  custom_domains_not_enabled: { status: 503, title: "Custom domains not enabled", when: "this deployment runs without custom domains" },
  subscribers_unavailable: { status: 503, title: "Subscribers service unavailable", when: "the campaigns service could not reach the subscribers service" },
  templates_unavailable: { status: 503, title: "Templates service unavailable", when: "the campaigns service could not reach the templates service" },
  campaigns_unavailable: { status: 503, title: "Campaigns service unavailable", when: "the templates service could not ask the campaigns service whether a template is in use, so it was not deleted" },
  // 504.
  deadline_exceeded: { status: 504, title: "Upstream timeout", when: "a service did not answer in time" },
} as const satisfies Record<string, ErrorCodeEntry>;

export type ErrorCode = keyof typeof ERROR_CODES;

export function isErrorCode(code: string): code is ErrorCode {
  return Object.hasOwn(ERROR_CODES, code);
}

/** The codes answered with `status`, in the table's order. */
export function codesWithStatus(status: number): ErrorCode[] {
  return (Object.keys(ERROR_CODES) as ErrorCode[]).filter((code) => ERROR_CODES[code].status === status);
}
