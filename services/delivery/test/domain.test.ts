import { delivery } from "@emailsvc/proto";
import { AppError } from "@emailsvc/errors";
import { ConfigError, loadServiceEnv } from "@emailsvc/runtime";
import { serviceUrls } from "@emailsvc/service";
import { loadConfig } from "../src/config.js";
import { deliveryService } from "../src/service.js";
import {
  canonicalJson,
  requestHash,
  validateIdempotencyKey,
  validateRecipient,
  validateVariables,
} from "../src/domain/email.js";
import { buildMessage, listUnsubscribeHeaders, messageIdFor, parseSender, scrubReason } from "../src/domain/message.js";
import { afterFailure, backoffAfter, PUBLIC_ERRORS, publicError, SendFailure, type EmailProvider, type FailureCode, type FailureKind } from "../src/domain/provider.js";
import { mailCategory, refusal } from "../src/domain/eligibility.js";
import { SERVICES } from "@emailsvc/manifest";
import { configureProvider, loadProviders, PROVIDERS, Providers, type ProviderContext, type ProviderSetup } from "../src/providers/registry.js";
import { failureReasonOf } from "../src/storage/documents.js";
import { RendererCache, type CompiledTemplate, type Rendered } from "../src/domain/renderer.js";
import { classifySmtpError, parseSmtpUrl } from "../src/providers/smtp.js";
import { classifySesError, parseSesSettings } from "../src/providers/ses.js";
import { compileRenderer } from "@emailsvc/render";

function appError(fn: () => unknown): AppError {
  try {
    fn();
  } catch (err) {
    if (err instanceof AppError) return err;
    throw err;
  }
  throw new Error("expected an AppError");
}

describe("recipient, variables and idempotency key", () => {
  it("accepts a plain address, trimmed, case kept", () => {
    expect(validateRecipient("  Ada@Example.com ")).toBe("Ada@Example.com");
  });

  it.each([
    ["", "is required"],
    ["no-at-sign", "is not a valid email address"],
    ["a@b", "is not a valid email address"],
    ["a b@example.com", "is not a valid email address"],
    ["victim@example.com\r\nBcc: x@example.com", "must not contain line breaks"],
    ["victim@example.com\n", "must not contain line breaks"],
    [`${"a".repeat(243)}@example.com`, "is not a valid email address"],
  ])("rejects %j", (raw, description) => {
    const err = appError(() => validateRecipient(raw));
    expect(err.code).toBe("validation_failed");
    expect(err.extra.fieldViolations).toEqual([{ field: "to", description }]);
  });

  it("takes variables up to 64 KiB as JSON and answers 413 beyond", () => {
    expect(validateVariables(undefined)).toEqual({});
    expect(validateVariables({ a: "x".repeat(60 * 1024) })).toBeDefined();
    const err = appError(() => validateVariables({ a: "x".repeat(64 * 1024) }));
    expect(err.kind).toBe("too_large");
    expect(err.code).toBe("variables_too_large");
    // Bytes, not characters: multi-byte text counts as what it weighs.
    expect(appError(() => validateVariables({ a: "é".repeat(33 * 1024) })).code).toBe("variables_too_large");
    expect(appError(() => validateVariables([1, 2])).code).toBe("validation_failed");
    expect(appError(() => validateVariables("text")).code).toBe("validation_failed");
  });

  it("takes keys of 1-255 printable characters; empty means none", () => {
    expect(validateIdempotencyKey("")).toBeUndefined();
    expect(validateIdempotencyKey(undefined)).toBeUndefined();
    expect(validateIdempotencyKey("order 42/ä".replace("ä", "a"))).toBe("order 42/a");
    expect(validateIdempotencyKey("k".repeat(255))).toBe("k".repeat(255));
    for (const bad of ["k".repeat(256), " lead", "trail ", "tab\there", "new\nline", "ümlaut"]) {
      expect(appError(() => validateIdempotencyKey(bad)).extra.fieldViolations![0]!.field).toBe("idempotency_key");
    }
  });

  it("hashes the request canonically: key order does not matter, values do", () => {
    expect(canonicalJson({ b: 1, a: { d: [1, { z: 1, y: 2 }], c: null } })).toBe('{"a":{"c":null,"d":[1,{"y":2,"z":1}]},"b":1}');
    const a = requestHash({ templateSlug: "w", to: "a@example.com", variables: { x: 1, y: { p: "q", o: [1] } } });
    const b = requestHash({ templateSlug: "w", to: "a@example.com", variables: { y: { o: [1], p: "q" }, x: 1 } });
    expect(a).toBe(b);
    expect(a).toMatch(/^[0-9a-f]{64}$/);
    expect(requestHash({ templateSlug: "w", to: "a@example.com", variables: { x: 2, y: { p: "q", o: [1] } } })).not.toBe(a);
    expect(requestHash({ templateSlug: "v", to: "a@example.com", variables: { x: 1, y: { p: "q", o: [1] } } })).not.toBe(a);
    expect(requestHash({ templateSlug: "w", to: "b@example.com", variables: { x: 1, y: { p: "q", o: [1] } } })).not.toBe(a);
  });
});

describe("the message", () => {
  const sender = parseSender('"Acme News" <news@Mail.Acme.example>');
  const rendered: Rendered = { subject: "Hello\r\nBcc: x@example.com", html: "<p>Hi</p>", text: "Hi", missing: [] };

  it("parses EMAIL_FROM with or without a display name", () => {
    expect(sender).toEqual({ name: "Acme News", address: "news@Mail.Acme.example", domain: "mail.acme.example", header: '"Acme News" <news@Mail.Acme.example>' });
    expect(parseSender("no-reply@localhost")).toMatchObject({ name: "", address: "no-reply@localhost", domain: "localhost" });
    expect(parseSender("Email Platform <no-reply@localhost>")).toMatchObject({ name: "Email Platform", domain: "localhost" });
    expect(() => parseSender("not an address")).toThrow(/EMAIL_FROM/);
    expect(() => parseSender("A <a@example.com>\r\nBcc: b@example.com")).toThrow(/control characters/);
  });

  it("derives the Message-ID from the email id alone", () => {
    expect(messageIdFor("eml_01abc", sender)).toBe("<eml_01abc@mail.acme.example>");
    expect(messageIdFor("eml_01abc", sender)).toBe(messageIdFor("eml_01abc", sender));
  });

  it("builds headers and parts; a subject never carries a line break", () => {
    const m = buildMessage({ emailId: "eml_1", from: sender, to: "a@example.com", category: "transactional", rendered, unsubscribeUrl: "https://u.example/x", tenant: "acc_1:live" });
    expect(m.subject).toBe("Hello Bcc: x@example.com");
    expect(m.headers).toEqual({ From: sender.header, To: "a@example.com", Subject: "Hello Bcc: x@example.com", "Message-ID": "<eml_1@mail.acme.example>" });
    expect(m.html).toBe("<p>Hi</p>");
    expect(m.text).toBe("Hi");
  });

  it("adds List-Unsubscribe and the RFC 8058 one-click header to marketing mail when a URL is known", () => {
    const url = "https://prefs.example/unsubscribe?token=abc";
    const m = buildMessage({ emailId: "eml_1", from: sender, to: "a@example.com", category: "marketing", rendered, unsubscribeUrl: url, tenant: "acc_01jd3x0k8m7y6t5r4q3p2n1m0k:live" });
    expect(m.headers["List-Unsubscribe"]).toBe(`<${url}>`);
    expect(m.headers["List-Id"]).toBe("<acc_01jd3x0k8m7y6t5r4q3p2n1m0k.live.mail.acme.example>");
    expect(m.headers["List-Unsubscribe-Post"]).toBe("List-Unsubscribe=One-Click");
    const none = buildMessage({ emailId: "eml_1", from: sender, to: "a@example.com", category: "marketing", rendered });
    expect(none.headers["List-Unsubscribe"]).toBeUndefined();
    // One-click needs HTTPS; other URIs get the plain header only.
    expect(listUnsubscribeHeaders("mailto:unsub@acme.example")).toEqual({ "List-Unsubscribe": "<mailto:unsub@acme.example>" });
    expect(() => listUnsubscribeHeaders("https://x.example/a b")).toThrow();
    expect(() => listUnsubscribeHeaders("https://x.example/>\r\nBcc: y")).toThrow();
  });

  it("treats every campaign's mail as bulk mail, with one List-Id per account and mode and the campaign in X-Campaign-Id", () => {
    const url = "https://prefs.example/unsubscribe?token=abc";
    const tenant = "acc_01jd3x0k8m7y6t5r4q3p2n1m0k:live";
    const of = (category: "transactional" | "marketing", campaignId?: string) =>
      buildMessage({ emailId: "eml_1", from: sender, to: "a@example.com", category, rendered, unsubscribeUrl: url, tenant, campaignId }).headers;
    const transactionalCampaign = of("transactional", "cmp_01jd3x0k8m7y6t5r4q3p2n1m0a");
    expect(transactionalCampaign).toMatchObject({
      "List-Unsubscribe": `<${url}>`,
      "List-Unsubscribe-Post": "List-Unsubscribe=One-Click",
      "List-Id": "<acc_01jd3x0k8m7y6t5r4q3p2n1m0k.live.mail.acme.example>",
      "X-Campaign-Id": "cmp_01jd3x0k8m7y6t5r4q3p2n1m0a",
    });
    // The list is the account's: the same for another campaign and for a marketing send outside one.
    expect(of("marketing", "cmp_01jd3x0k8m7y6t5r4q3p2n1m0b")["List-Id"]).toBe(transactionalCampaign["List-Id"]);
    expect(of("marketing")["List-Id"]).toBe(transactionalCampaign["List-Id"]);
    expect(of("marketing")["X-Campaign-Id"]).toBeUndefined();
    expect(of("transactional")).toEqual({ From: sender.header, To: "a@example.com", Subject: "Hello Bcc: x@example.com", "Message-ID": "<eml_1@mail.acme.example>" });
  });

  it("scrubs addresses out of a provider's reason", () => {
    expect(scrubReason("550 5.1.1 <Bob@Example.com>: Recipient address rejected", "Bob@Example.com")).toBe("550 5.1.1 <recipient>: Recipient address rejected");
    expect(scrubReason("550 user bob@example.com unknown\r\nmore", "x@y.example")).toBe("550 user <recipient> unknown more");
    expect(scrubReason("x".repeat(600), "").length).toBe(500);
    expect(scrubReason("250 2.0.0 Ok: queued as 4F1A2", "bob@example.com")).toBe("250 2.0.0 Ok: queued as 4F1A2");
    expect(scrubReason(" 250 ok\u00a0", "bob@example.com")).toBe("250 ok");
  });
});

describe("what a failed attempt leads to", () => {
  const policy = { backoffMs: 60_000, maxBackoffMs: 3_600_000, windowMs: 72 * 3_600_000 };
  const queuedAt = 1_000_000;
  const state = (attempts: number, age = 0) => ({ attempts, queuedAt, now: queuedAt + age });
  const f = (kind: FailureKind, code: FailureCode = "relay_deferred") =>
    new SendFailure(kind, code, { reply: "451 4.3.0 later", detail: "ESOCKET: connect ECONNREFUSED 10.0.0.7:25" });

  it("bounces a refusal of the recipient (5xx at RCPT) hard at once, with its code and the relay's reply as the diagnostic; a refusal of the message fails it", () => {
    const rejected = new SendFailure("permanent", "recipient_rejected", { reply: "550 no such user" });
    expect(afterFailure(rejected, state(1), policy)).toEqual({
      kind: "settle",
      status: "bounced",
      reason: "recipient_rejected",
      error: "recipient_rejected: 550 no such user",
      bounce: { type: "hard", diagnostic: "550 no such user" },
    });
    const message = new SendFailure("permanent", "message_rejected", { reply: "554 5.7.1 spam" });
    // About the content or the sender, not the address: failed, and no bounce to suppress the recipient by.
    expect(afterFailure(message, state(1), policy)).toEqual({ kind: "settle", status: "failed", reason: "message_rejected", error: "message_rejected: 554 5.7.1 spam" });
  });
  it("fails what cannot be built, and suppresses a recipient who may not get the mail", () => {
    const render = new SendFailure("permanent", "template_render_failed", { detail: "RangeError: Maximum call stack size exceeded" });
    expect(afterFailure(render, state(1), policy)).toEqual({ kind: "settle", status: "failed", reason: "template_render_failed", error: "template_render_failed" });
    for (const code of ["recipient_unsubscribed", "recipient_bounced", "recipient_complained", "recipient_suppressed"] as const) {
      expect(afterFailure(new SendFailure("permanent", code), state(1), policy)).toEqual({ kind: "settle", status: "suppressed", reason: code, error: code });
    }
  });
  it("defers a 'not now' with exponential backoff (1 min doubling, capped at 1 h) within the window", () => {
    expect(afterFailure(f("transient"), state(1), policy)).toEqual({ kind: "defer", nextAttemptAt: queuedAt + 60_000, reply: "451 4.3.0 later" });
    expect(afterFailure(f("transient"), state(2, 5_000), policy)).toEqual({ kind: "defer", nextAttemptAt: queuedAt + 5_000 + 120_000, reply: "451 4.3.0 later" });
    expect(afterFailure(f("transient"), state(4), policy)).toMatchObject({ nextAttemptAt: queuedAt + 480_000 });
    expect(afterFailure(f("transient"), state(30), policy)).toMatchObject({ nextAttemptAt: queuedAt + 3_600_000 });
    expect(backoffAfter(1000, policy)).toBe(3_600_000);
    // The last attempt comes at the window's end, not past it.
    expect(afterFailure(f("transient"), state(70, policy.windowMs - 10_000), policy)).toMatchObject({ kind: "defer", nextAttemptAt: queuedAt + policy.windowMs });
  });
  it("bounces soft once the window has passed, with the last reply", () => {
    expect(afterFailure(f("transient"), state(80, policy.windowMs), policy)).toEqual({
      kind: "settle",
      status: "bounced",
      reason: "attempts_exhausted",
      error: "attempts_exhausted: 451 4.3.0 later",
      bounce: { type: "soft", diagnostic: "451 4.3.0 later" },
    });
  });
  it("defers an unreachable relay or service, then fails it (not a bounce: the address is not in question); its detail stays inside", () => {
    expect(afterFailure(f("unreachable", "relay_unavailable"), state(40, 59_000), policy)).toMatchObject({ kind: "defer" });
    expect(afterFailure(f("unreachable", "relay_unavailable"), state(41, policy.windowMs), policy)).toEqual({ kind: "settle", status: "failed", reason: "relay_unavailable", error: "relay_unavailable" });
    expect(afterFailure(f("unreachable", "service_unavailable"), state(41, policy.windowMs), policy)).toEqual({ kind: "settle", status: "failed", reason: "service_unavailable", error: "service_unavailable" });
  });
  it("shows only documented codes", () => {
    expect(publicError("recipient_erased")).toBe("recipient_erased");
    for (const code of ["template_unavailable", "template_render_failed", "relay_unavailable", "service_unavailable"] as const) {
      expect(afterFailure(new SendFailure("permanent", code, { detail: "internal" }), state(1), policy)).toEqual({ kind: "settle", status: "failed", reason: code, error: code });
      expect(Object.keys(PUBLIC_ERRORS)).toContain(code);
    }
  });
  it("leaves an aborted attempt to its lease, as a crash", () => {
    expect(afterFailure(f("aborted"), state(9, 10_000_000), policy)).toEqual({ kind: "retry" });
  });
});

describe("SMTP errors and settings", () => {
  const classify = (err: Record<string, unknown>) => classifySmtpError(Object.assign(new Error(String(err.message ?? "x")), err), "bob@example.com");

  it.each<[Record<string, unknown>, FailureKind, FailureCode]>([
    [{ code: "EENVELOPE", command: "RCPT TO", responseCode: 550, response: "550 5.1.1 <bob@example.com>: User unknown" }, "permanent", "recipient_rejected"],
    [{ code: "EMESSAGE", command: "DATA", responseCode: 554, response: "554 5.7.1 Spam" }, "permanent", "message_rejected"],
    [{ code: "EMESSAGE", responseCode: 451, response: "451 4.3.0 later" }, "transient", "relay_deferred"],
    [{ code: "EENVELOPE", responseCode: 452, response: "452 mailbox full" }, "transient", "relay_deferred"],
    [{ code: "EPROTOCOL", responseCode: 503, response: "503 bad sequence" }, "transient", "relay_deferred"],
    [{ code: "EMESSAGE", responseCode: 421, response: "421 shutting down" }, "unreachable", "relay_unavailable"],
    [{ code: "ESOCKET", originalCode: "ECONNREFUSED", message: "connect ECONNREFUSED 127.0.0.1:25" }, "unreachable", "relay_unavailable"],
    [{ code: "ECONNECTION", message: "Connection closed" }, "unreachable", "relay_unavailable"],
    [{ code: "EDNS", message: "getaddrinfo ENOTFOUND smtp.nowhere" }, "unreachable", "relay_unavailable"],
    [{ code: "EAUTH", responseCode: 535, response: "535 5.7.8 bad credentials" }, "unreachable", "relay_unavailable"],
    [{ code: "EAUTH", message: "Invalid login" }, "unreachable", "relay_unavailable"],
    [{ code: "ETIMEDOUT", timeoutType: "GREETING_TIMEOUT" }, "unreachable", "relay_unavailable"],
    [{ code: "ETIMEDOUT", timeoutType: "SOCKET_TIMEOUT" }, "transient", "relay_deferred"],
    [{ code: "EABORT", message: "aborted" }, "aborted", "send_aborted"],
    [{ message: "something else" }, "transient", "relay_deferred"],
  ])("%j is %s (%s)", (err, kind, code) => {
    const failure = classify(err);
    expect(failure.kind).toBe(kind);
    expect(failure.code).toBe(code);
    expect(failure.reply).not.toContain("bob@example.com");
    expect(failure.detail).not.toContain("bob@example.com");
  });

  it("keeps the server's reply, addresses removed, as what a client may see; the client's own text as detail only", () => {
    const rejected = classify({ command: "RCPT TO", responseCode: 550, response: "550 5.1.1 <bob@example.com>: User unknown" });
    expect(rejected.reply).toBe("550 5.1.1 <recipient>: User unknown");
    const refused = classify({ code: "ESOCKET", message: "connect ECONNREFUSED 10.1.2.3:25" });
    expect(refused.reply).toBe("");
    expect(refused.detail).toBe("ESOCKET: connect ECONNREFUSED 10.1.2.3:25");
  });

  it("parses SMTP_URL", () => {
    expect(parseSmtpUrl("smtp://user%40x:p%3Ass@relay.example:2525")).toEqual({
      host: "relay.example", port: 2525, secure: false, user: "user@x", pass: "p:ss", requireTls: false, tlsVerify: true, maxConnections: 5, chunking: true,
    });
    expect(parseSmtpUrl("smtp://relay.example")).toMatchObject({ port: 587, secure: false, user: undefined });
    expect(parseSmtpUrl("smtps://u:p@relay.example")).toMatchObject({ port: 465, secure: true });
    expect(parseSmtpUrl("smtp://relay.example?require_tls=true&tls_verify=false&pool=2")).toMatchObject({ requireTls: true, tlsVerify: false, maxConnections: 2 });
    expect(parseSmtpUrl("smtp://relay.example?chunking=off")).toMatchObject({ chunking: false });
    expect(parseSmtpUrl("smtp://relay.example?chunking=on&pool=3")).toMatchObject({ chunking: true, maxConnections: 3 });
    for (const bad of ["http://relay.example", "relay.example:25", "smtp://relay.example?pool=0", "smtp://relay.example?verbose=1", "smtp://relay.example?require_tls=maybe", "smtp://relay.example?chunking=bdat"]) {
      expect(() => parseSmtpUrl(bad)).toThrow(/SMTP_URL/);
    }
    // The password never shows in an error.
    expect(() => parseSmtpUrl("smtp://u:topsecret@relay.example?pool=x")).toThrow(expect.objectContaining({ message: expect.not.stringContaining("topsecret") }));
  });
});

describe("config", () => {
  it("has defaults for a laptop", () => {
    expect(loadConfig({})).toMatchObject({
      providers: { live: { name: "sandbox" }, sandbox: { name: "sandbox" } },
      from: { name: "Email Platform", address: "no-reply@localhost" },
      sweepIntervalMs: 2000,
      stalledAfterMs: 600_000,
    });
    expect(loadServiceEnv("delivery", {})).toMatchObject({ grpcPort: 50053, mongoDb: "delivery" });
    // Both required: the compiled templates, and who may be mailed.
    expect(serviceUrls(deliveryService, {})).toEqual({ templates: "http://127.0.0.1:50052", subscribers: "http://127.0.0.1:50051" });
    expect(serviceUrls(deliveryService, { SUBSCRIBERS_URL: "http://subscribers:50051" })).toMatchObject({ subscribers: "http://subscribers:50051" });
  });

  it("fails fast on a bad provider, SMTP without URL, a bad URL or sender", () => {
    expect(() => loadConfig({ EMAIL_PROVIDER: "mailgun" })).toThrow(/EMAIL_PROVIDER must be one of sandbox, smtp, ses/);
    expect(() => loadConfig({ EMAIL_PROVIDER: "smtp" })).toThrow(/SMTP_URL/);
    expect(() => loadConfig({ EMAIL_PROVIDER: "smtp", SMTP_URL: "ftp://x" })).toThrow(/SMTP_URL/);
    expect(() => loadConfig({ EMAIL_FROM: "nobody" })).toThrow(/EMAIL_FROM/);
    expect(() => loadConfig({ DELIVERY_STALLED_AFTER_MS: "soon" })).toThrow(/DELIVERY_STALLED_AFTER_MS/);
    expect(() => serviceUrls(deliveryService, { TEMPLATES_URL: "templates:50052" })).toThrow(/TEMPLATES_URL/);
    expect(loadConfig({ EMAIL_PROVIDER: "smtp", SMTP_URL: "smtps://u:p@relay.example", EMAIL_FROM: "Acme <a@acme.example>" })).toMatchObject({
      providers: { live: { name: "smtp", description: "smtps://u@relay.example:465" }, sandbox: { name: "sandbox" } },
    });
  });

  it("reads SES_NOTIFICATION_TOPIC_ARNS as SNS topic ARNs, none by default, and refuses anything else", () => {
    expect(loadConfig({}).sesNotificationTopics).toEqual([]);
    expect(loadConfig({ SES_NOTIFICATION_TOPIC_ARNS: " arn:aws:sns:eu-west-1:123456789012:ses-events, arn:aws-cn:sns:cn-north-1:123456789012:other " }).sesNotificationTopics).toEqual([
      "arn:aws:sns:eu-west-1:123456789012:ses-events",
      "arn:aws-cn:sns:cn-north-1:123456789012:other",
    ]);
    expect(() => loadConfig({ SES_NOTIFICATION_TOPIC_ARNS: "ses-events" })).toThrow(/SES_NOTIFICATION_TOPIC_ARNS must list SNS topic ARNs/);
    expect(() => loadConfig({ SES_NOTIFICATION_TOPIC_ARNS: "arn:aws:sqs:eu-west-1:123456789012:queue" })).toThrow(/SES_NOTIFICATION_TOPIC_ARNS/);
  });
});

describe("SES errors and settings", () => {
  const SES = { EMAIL_PROVIDER: "ses", SES_REGION: "eu-west-1", AWS_ACCESS_KEY_ID: "AKIAEXAMPLE", AWS_SECRET_ACCESS_KEY: "wJalrXUtnFEMI/K7MDENG" };
  const classify = (err: Record<string, unknown>, signal?: AbortSignal) => classifySesError(Object.assign(new Error(String(err.message ?? "x")), err), "bob@example.com", signal);
  const answered = (name: string, status: number, message: string, fault: "client" | "server" = status >= 500 ? "server" : "client") => ({ name, message, $fault: fault, $metadata: { httpStatusCode: status } });

  it.each<[Record<string, unknown>, FailureKind, FailureCode]>([
    [answered("MessageRejected", 400, "Email address is not verified: bob@example.com"), "permanent", "message_rejected"],
    [answered("MailFromDomainNotVerifiedException", 400, "MAIL FROM domain not verified"), "permanent", "from_domain_not_verified"],
    [answered("BadRequestException", 400, "Illegal address"), "permanent", "message_rejected"],
    [answered("TooManyRequestsException", 429, "Maximum sending rate exceeded"), "transient", "relay_deferred"],
    [answered("LimitExceededException", 400, "Daily quota exceeded"), "transient", "relay_deferred"],
    [answered("AccountSuspendedException", 400, "account suspended"), "transient", "relay_deferred"],
    [answered("SendingPausedException", 400, "sending paused"), "transient", "relay_deferred"],
    [answered("InternalServiceErrorException", 500, "internal"), "transient", "relay_deferred"],
    [answered("ServiceUnavailable", 503, ""), "transient", "relay_deferred"],
    [answered("UnrecognizedClientException", 403, "The security token included in the request is invalid."), "unreachable", "relay_unavailable"],
    [answered("NotFoundException", 404, "Configuration set <x> does not exist."), "unreachable", "relay_unavailable"],
    [{ name: "Error", code: "ECONNREFUSED", message: "connect ECONNREFUSED 127.0.0.1:8005" }, "unreachable", "relay_unavailable"],
    [{ name: "TimeoutError", message: "Connection timed out after 5000 ms" }, "transient", "relay_deferred"],
    [{ name: "AbortError", message: "Request aborted" }, "aborted", "send_aborted"],
  ])("%j is %s (%s)", (err, kind, code) => {
    const failure = classify(err);
    expect(failure.kind).toBe(kind);
    expect(failure.code).toBe(code);
    expect(failure.reply).not.toContain("bob@example.com");
    expect(failure.detail).not.toContain("bob@example.com");
  });

  it("shows SES's message, addresses removed, for a refusal; nothing of a network error or of our credentials", () => {
    expect(classify(answered("MessageRejected", 400, "Email address is not verified: bob@example.com")).reply).toBe("MessageRejected: Email address is not verified: <recipient>");
    expect(classify({ name: "Error", code: "ECONNREFUSED", message: "connect ECONNREFUSED 10.1.2.3:443" }).reply).toBe("");
    expect(classify(answered("UnrecognizedClientException", 403, "invalid token")).reply).toBe("");
    const controller = new AbortController();
    controller.abort();
    expect(classify(answered("InternalServiceErrorException", 500, "x"), controller.signal).kind).toBe("aborted");
  });

  it("reads its settings at start, naming each missing or bad one, never a key", () => {
    expect(() => loadConfig({ EMAIL_PROVIDER: "ses" })).toThrow("EMAIL_PROVIDER=ses needs SES_REGION (e.g. eu-west-1), AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY");
    expect(() => loadConfig({ ...SES, SES_REGION: "" })).toThrow(/needs SES_REGION/);
    expect(() => loadConfig({ ...SES, AWS_SECRET_ACCESS_KEY: undefined })).toThrow(/needs AWS_SECRET_ACCESS_KEY$/);
    expect(() => loadConfig({ ...SES, SES_REGION: "EU West" })).toThrow(/SES_REGION must be/);
    expect(() => loadConfig({ ...SES, SES_ENDPOINT: "localhost:8005" })).toThrow(/SES_ENDPOINT/);
    expect(() => loadConfig({ ...SES, SES_ENDPOINT: "https://AKIA:secret@ses.example" })).toThrow(expect.objectContaining({ message: expect.not.stringContaining("secret@") }));
    expect(() => loadConfig({ ...SES, SES_CONFIGURATION_SET: "has spaces" })).toThrow(/SES_CONFIGURATION_SET/);
    expect(parseSesSettings({ ...SES, SES_ENDPOINT: "http://127.0.0.1:8005", SES_CONFIGURATION_SET: "emailsvc-events" })).toEqual({
      region: "eu-west-1",
      endpoint: "http://127.0.0.1:8005",
      configurationSet: "emailsvc-events",
      credentials: { accessKeyId: "AKIAEXAMPLE", secretAccessKey: "wJalrXUtnFEMI/K7MDENG" },
    });
    const live = loadConfig({ ...SES, SES_CONFIGURATION_SET: "emailsvc-events" }).providers.live;
    expect(live).toMatchObject({ name: "ses", description: "ses eu-west-1 configuration set emailsvc-events" });
    expect(live.description).not.toMatch(/AKIA|wJalr/);
  });
});

describe("provider registry", () => {
  it("knows each provider by name, exactly those delivery's manifest entry declares, the sandbox among them", () => {
    expect([...PROVIDERS.keys()]).toEqual(Object.keys(SERVICES.delivery.providers.options));
    expect([...PROVIDERS.keys()]).toContain("sandbox");
    for (const [name, definition] of PROVIDERS) expect(definition.name).toBe(name);
  });

  it("declares in the manifest the secrets each provider asks for: without them its settings fail, naming each", () => {
    for (const [name, declaration] of Object.entries(SERVICES.delivery.providers.options)) {
      const secrets = Object.keys(declaration.secrets);
      if (secrets.length === 0) continue;
      expect(() => configureProvider(name, {})).toThrow(ConfigError);
      for (const secret of secrets) expect(() => configureProvider(name, {})).toThrow(new RegExp(secret));
    }
  });

  it("picks EMAIL_PROVIDER's for live mail, always the sandbox for test mode, and builds only those", async () => {
    const built: string[] = [];
    const fake = (name: string): EmailProvider => ({ name, send: async () => ({ response: name }), close: async () => {} });
    const setup = (live: string): ProviderSetup => {
      const configured = (name: string) => ({ name, description: name, build: () => (built.push(name), fake(name)) });
      return { live: configured(live), sandbox: configured("sandbox") };
    };
    const context = {} as ProviderContext;
    const smtp = Providers.build(setup("smtp"), context);
    expect(built).toEqual(["sandbox", "smtp"]);
    expect(smtp.forTenant("acc_1:live").name).toBe("smtp");
    expect(smtp.forTenant("acc_1:test").name).toBe("sandbox");
    built.length = 0;
    const sandboxOnly = Providers.build(setup("sandbox"), context);
    expect(built).toEqual(["sandbox"]);
    expect(sandboxOnly.forTenant("acc_1:live").name).toBe("sandbox");
    await Promise.all([smtp.close(), sandboxOnly.close()]);
  });

  it("fails fast with a ConfigError naming the variable: an unknown EMAIL_PROVIDER lists the known ones", () => {
    expect(() => loadProviders({ EMAIL_PROVIDER: "mailgun" })).toThrow(new ConfigError('EMAIL_PROVIDER must be one of sandbox, smtp, ses, got "mailgun"'));
    expect(() => configureProvider("smtp", {})).toThrow(ConfigError);
    expect(() => configureProvider("smtp", {})).toThrow(/SMTP_URL/);
    const badUrl = { SMTP_URL: "smtp://u:topsecret@relay.example?pool=x" };
    expect(() => configureProvider("smtp", badUrl)).toThrow(ConfigError);
    expect(() => configureProvider("smtp", badUrl)).toThrow(expect.objectContaining({ message: expect.not.stringContaining("topsecret") }));
    // The sandbox's settings are read whatever EMAIL_PROVIDER says (test mode always uses it).
    expect(loadProviders({ EMAIL_PROVIDER: "smtp", SMTP_URL: "smtp://relay.example" }).sandbox.name).toBe("sandbox");
  });
});

describe("recipient eligibility", () => {
  const may = { marketing: undefined, transactional: undefined };
  it("applies the subscribers service's answer for the email's category", () => {
    expect(refusal("marketing", may)).toBeUndefined();
    expect(refusal("transactional", may)).toBeUndefined();
    expect(refusal("marketing", { marketing: "unsubscribed", transactional: undefined })).toBe("recipient_unsubscribed");
    expect(refusal("transactional", { marketing: "unsubscribed", transactional: undefined })).toBeUndefined();
    expect(refusal("marketing", { marketing: "suppressed", transactional: undefined })).toBe("recipient_suppressed");
    expect(refusal("transactional", { marketing: "bounced", transactional: "bounced" })).toBe("recipient_bounced");
    expect(refusal("marketing", { marketing: "complained", transactional: "complained" })).toBe("recipient_complained");
    // A campaign's recipient who is no subscriber any more; no subscribers service to ask.
    expect(refusal("marketing", "erased")).toBe("recipient_erased");
    expect(refusal("marketing", "unknown")).toBeUndefined();
  });

  it("lets a transactional template's ignore_suppressions lift a bounced or complained block, never a marketing one", () => {
    const bounced = { marketing: "bounced", transactional: "bounced" } as const;
    const complained = { marketing: "complained", transactional: "complained" } as const;
    expect(refusal("transactional", bounced, ["hard_bounce"])).toBeUndefined();
    expect(refusal("transactional", complained, ["hard_bounce"])).toBe("recipient_complained");
    expect(refusal("transactional", complained, ["complaint"])).toBeUndefined();
    expect(refusal("marketing", bounced, ["hard_bounce", "complaint"])).toBe("recipient_bounced");
    expect(refusal("transactional", "erased", ["hard_bounce"])).toBe("recipient_erased");
  });

  it("judges campaign mail as marketing whatever its template, other mail by its template", () => {
    expect(mailCategory("transactional", true)).toBe("marketing");
    expect(mailCategory("marketing", false)).toBe("marketing");
    expect(mailCategory("transactional", false)).toBe("transactional");
    expect(mailCategory("unspecified", false)).toBe("transactional");
  });

  it("has every refusal in the public vocabulary, and that vocabulary is the proto enum's codes", () => {
    expect(Object.keys(PUBLIC_ERRORS).sort()).toEqual(Object.values(delivery.FAILURE_REASON_CODES).sort());
  });

  it("reads an email's reason from its own field; an email failed before that field existed, from its error text", () => {
    const failed = { status: "failed" as const, error: "recipient_rejected: 550 5.1.1 <recipient>: User unknown" };
    expect(failureReasonOf({ ...failed, failure_reason: "message_rejected" })).toBe("message_rejected");
    expect(failureReasonOf(failed)).toBe("recipient_rejected");
    expect(failureReasonOf({ status: "failed", error: "something else" })).toBeUndefined();
    expect(failureReasonOf({ status: "sent", error: "" })).toBeUndefined();
  });
});

describe("renderer cache", () => {
  const template = (id: string, version: number): CompiledTemplate => ({
    templateId: id, slug: "s", version, category: "transactional", subject: `v${version} {{name}}`, html: "<p>{{name}}</p>",
  });

  it("compiles a version once and keeps a bounded number, least recently used out first", () => {
    let compiled = 0;
    const cache = new RendererCache((c) => {
      compiled++;
      return compileRenderer(c);
    }, 2);
    const k1 = RendererCache.key("acc:live", "tpl_1", 1);
    const k2 = RendererCache.key("acc:live", "tpl_1", 2);
    const k3 = RendererCache.key("acc:live", "tpl_2", 1);
    cache.put(k1, template("tpl_1", 1));
    cache.put(k2, template("tpl_1", 2));
    expect(cache.get(k1)!.render!({ name: "<x>" }).subject).toBe("v1 <x>");
    cache.put(k3, template("tpl_2", 1)); // evicts k2, the least recently used
    expect(cache.get(k2)).toBeUndefined();
    expect(cache.get(k1)).toBeDefined();
    expect(cache.size).toBe(2);
    expect(compiled).toBe(3);
  });

  it("remembers a version beyond the limits, so that it is compiled once, not per message", () => {
    let compiled = 0;
    const cache = new RendererCache((c) => {
      compiled++;
      return compileRenderer(c);
    });
    const key = RendererCache.key("acc:live", "tpl_deep", 1);
    const deep = { ...template("tpl_deep", 1), html: "{{#if x}}".repeat(3000) + "{{/if}}".repeat(3000) };
    const first = cache.put(key, deep);
    expect(first.render).toBeUndefined();
    expect(first.rejected?.problems[0]).toMatchObject({ part: "html", limit: "blockDepth" });
    expect(cache.get(key)).toEqual(first);
    expect(cache.get(key)!.template).toBe(deep);
    expect(compiled).toBe(1);
  });
});
