// An in-memory stand-in for the delivery service, served over
// createRouterTransport. It follows the contract: tenant from headers,
// templates looked up by slug in the caller's tenant (through the fake
// templates service's state), idempotency keys per tenant (same key and body:
// the stored email again with `replayed`; another body: 409), AppErrors with
// ErrorDetail. It "sends" nothing: tests move emails along with markSent /
// markFailed, and with `sandbox` on (the default) it keeps the rendered message.

import { create, type JsonObject } from "@bufbuild/protobuf";
import { timestampFromDate } from "@bufbuild/protobuf/wkt";
import type { ConnectRouter } from "@connectrpc/connect";
import { delivery, health } from "@emailsvc/proto";
import { AppError, invalid } from "@emailsvc/errors";
import { newId } from "@emailsvc/ids";
import { FakeService } from "./fake-service";
import { paginate } from "./fake-subscribers";
import { render, type FakeTemplates } from "./fake-templates";

const { EmailSchema, EmailStatus, SandboxMessageSchema } = delivery;

interface Tenant {
  emails: delivery.Email[];
  keys: Map<string, { fingerprint: string; emailId: string; refused: boolean }>;
  sandbox: Map<string, delivery.SandboxMessage>;
}

/** The fake's limit on variables, as JSON. */
export const FAKE_VARIABLES_LIMIT = 1000;

export class FakeDelivery extends FakeService<Tenant> {
  /** Keep the rendered message (sandbox provider) or not (smtp). */
  sandbox = true;
  /** Recipients refused at once (address -> reason), as the real service refuses who may not get the mail. */
  readonly refuse = new Map<string, delivery.FailureReason>();

  constructor(private readonly templates: FakeTemplates) {
    super();
  }

  protected newTenant(): Tenant {
    return { emails: [], keys: new Map(), sandbox: new Map() };
  }

  /** Every email queued, in every tenant: "no second email" is this count. */
  get queued(): delivery.Email[] {
    return this.allTenants().flatMap((t) => t.emails);
  }

  markSent(id: string, messageId = `<${id}@example.test>`): void {
    const email = this.anyEmail(id);
    const now = timestampFromDate(new Date());
    Object.assign(email, { status: EmailStatus.SENT, messageId, attempts: email.attempts + 1, sentAt: now, updatedAt: now });
  }

  markFailed(id: string, reason: string): void {
    const email = this.anyEmail(id);
    const now = timestampFromDate(new Date());
    Object.assign(email, { status: EmailStatus.FAILED, error: reason, attempts: email.attempts + 1, failedAt: now, updatedAt: now });
  }

  routes(): (router: ConnectRouter) => void {
    return (router) => {
      router.service(delivery.DeliveryService, {
        sendEmail: (req, ctx) =>
          this.handle("sendEmail", ctx, (t, _call, tenantKey) => {
            const variables: JsonObject = req.variables ?? {};
            const fingerprint = JSON.stringify([req.templateSlug, req.to, variables]);
            if (req.idempotencyKey) {
              const seen = t.keys.get(req.idempotencyKey);
              if (seen && seen.fingerprint !== fingerprint) {
                throw new AppError("conflict", "idempotency_key_reused", "this idempotency key was used with another request");
              }
              // The stored email as it is now, which may have moved on since.
              if (seen) return { email: this.find(t, seen.emailId), replayed: true, refused: seen.refused };
            }
            if (!/^[^@\s]+@[^@\s]+\.[^@\s]+$/.test(req.to)) {
              throw invalid("to is invalid", [{ field: "to", description: "is not a valid email address" }]);
            }
            if (JSON.stringify(variables).length > FAKE_VARIABLES_LIMIT) {
              throw new AppError("too_large", "variables_too_large", `variables are larger than ${FAKE_VARIABLES_LIMIT} bytes`);
            }
            const template = this.templates.bySlug(tenantKey, req.templateSlug);
            if (!template) throw new AppError("not_found", "template_not_found", `no template with slug ${req.templateSlug}`);
            const now = timestampFromDate(new Date());
            const email = create(EmailSchema, {
              id: newId("eml"),
              status: EmailStatus.QUEUED,
              to: req.to,
              templateId: template.id,
              templateSlug: template.slug,
              templateVersion: template.version,
              idempotencyKey: req.idempotencyKey,
              provider: this.sandbox ? "sandbox" : "smtp",
              attempts: 0,
              queuedAt: now,
              updatedAt: now,
            });
            const refusal = this.refuse.get(req.to);
            if (refusal) {
              Object.assign(email, { status: EmailStatus.SUPPRESSED, error: delivery.failureReasonCode(refusal)!, failureReason: refusal, failedAt: now });
            }
            t.emails.push(email);
            if (req.idempotencyKey) t.keys.set(req.idempotencyKey, { fingerprint, emailId: email.id, refused: refusal !== undefined });
            if (refusal) return { email, replayed: false, refused: true };
            if (this.sandbox) {
              t.sandbox.set(
                email.id,
                create(SandboxMessageSchema, {
                  emailId: email.id,
                  from: "Acme <noreply@example.test>",
                  to: req.to,
                  subject: render(template.subject, variables, false).out,
                  html: render(template.mjmlContent, variables, true).out,
                  text: render(template.mjmlContent.replace(/<[^>]+>/g, ""), variables, false).out.trim(),
                  headers: { "Message-ID": `<${email.id}@example.test>`, "Content-Type": "multipart/alternative" },
                  capturedAt: now,
                }),
              );
            }
            return { email, replayed: false };
          }),
        getEmail: (req, ctx) => this.handle("getEmail", ctx, (t) => ({ email: this.find(t, req.id) })),
        listEmails: (req, ctx) =>
          this.handle("listEmails", ctx, (t) => {
            const { items, nextCursor } = paginate(t.emails, req.limit, req.cursor);
            return { emails: items, nextCursor };
          }),
        getSandboxMessage: (req, ctx) =>
          this.handle("getSandboxMessage", ctx, (t) => {
            this.find(t, req.emailId);
            const message = t.sandbox.get(req.emailId);
            if (!message) throw new AppError("not_found", "sandbox_message_not_found", "this email was not kept by the sandbox");
            return { message };
          }),
      });
      router.service(health.Health, this.healthImpl());
    };
  }

  private find(t: Tenant, id: string): delivery.Email {
    const email = t.emails.find((e) => e.id === id);
    if (!email) throw new AppError("not_found", "not_found", "email not found");
    return email;
  }

  private anyEmail(id: string): delivery.Email {
    const email = this.queued.find((e) => e.id === id);
    if (!email) throw new Error(`no email ${id} in the fake`);
    return email;
  }
}
