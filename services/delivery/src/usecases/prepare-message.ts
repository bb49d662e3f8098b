import { tenantOfKey } from "@emailsvc/tenancy";
import { readsVariable, RenderLimitError, type TemplateRejectedError } from "@emailsvc/render";
import type { MailCategory } from "../domain/eligibility.js";
import { buildMessage, scrubReason, senderFor, type OutgoingMessage } from "../domain/message.js";
import { SendFailure } from "../domain/provider.js";
import type { Recipient } from "../domain/recipients.js";
import { RendererCache, type Builtins, type MessageOptions, type PreparedTemplate } from "../domain/renderer.js";
import type { EmailDoc } from "../storage/documents.js";
import type { DeliveryDeps } from "./deliver-email.js";

// Message preparation: an email's pinned template version (cached), its
// variables and built-ins (the recipient's email and metadata, the
// unsubscribe and preference links), the render, and the message handed to a
// provider. Failures here are the email's own (SendFailure) or the templates
// service's absence (TemplatesUnavailableError).

/** A template version that renders (one that cannot fails the email when it is prepared). */
export type Renderable = Extract<PreparedTemplate, { render: unknown }>;

/** The message to hand to the provider, and its subject as rendered (kept on the record once sent). */
export interface PreparedMessage {
  message: OutgoingMessage;
  subject: string;
}

/**
 * The compiled renderer of the email's pinned template version, from the cache
 * or TemplateService. A version that cannot be rendered (beyond the limits of
 * @emailsvc/render, stored before they existed) fails the email for good
 * (`template_render_failed`; which part, line and limit in last_error); the
 * cache remembers it, so the version is neither fetched nor compiled again for
 * the next message.
 */
export async function prepareTemplate(
  deps: Pick<DeliveryDeps, "renderers" | "templates">,
  doc: EmailDoc,
  signal: AbortSignal,
): Promise<Renderable> {
  const prepared = await templateVersion(deps, doc, signal);
  if (prepared.rejected) {
    throw new SendFailure("permanent", "template_render_failed", {
      detail: `template ${doc.template_id} version ${doc.template_version} cannot be rendered: ${reasonOf(prepared.rejected)}`,
    });
  }
  return prepared;
}

/**
 * An email's template version, from the renderer cache or fetched from
 * TemplateService and compiled (and cached). Throws SendFailure when the
 * version no longer exists or does not compile, TemplatesUnavailableError
 * when the service does not answer.
 */
export async function templateVersion(
  deps: Pick<DeliveryDeps, "renderers" | "templates">,
  doc: Pick<EmailDoc, "_id" | "tenant" | "to" | "template_id" | "template_version">,
  signal: AbortSignal,
): Promise<PreparedTemplate> {
  const key = RendererCache.key(doc.tenant, doc.template_id, doc.template_version);
  const cached = deps.renderers.get(key);
  if (cached) return cached;
  const call = { tenant: tenantOfKey(doc.tenant), actor: "service:delivery", requestId: doc._id };
  const template = await deps.templates.byVersion(call, doc.template_id, doc.template_version, signal);
  if (!template || template.version !== doc.template_version) {
    throw new SendFailure("permanent", "template_unavailable", { detail: `template ${doc.template_id} version ${doc.template_version} no longer exists` });
  }
  try {
    return deps.renderers.put(key, template);
  } catch (err) {
    throw new SendFailure("permanent", "template_render_failed", { detail: `template could not be compiled: ${errorText(err, doc.to)}` });
  }
}

/** The email's template version when the cache has it and it renders: what prepareTemplate answers, without a promise. */
export function cachedTemplate(deps: Pick<DeliveryDeps, "renderers">, doc: Pick<EmailDoc, "tenant" | "template_id" | "template_version">): Renderable | undefined {
  const cached = deps.renderers.get(RendererCache.key(doc.tenant, doc.template_id, doc.template_version));
  return cached && !cached.rejected ? cached : undefined;
}

/** The signed links of a subscriber recipient that the version shows, minted by other parts of the platform. */
export interface MintedLinks {
  preferenceUrl?: string | undefined;
  confirmationUrl?: string | undefined;
}

export const NO_LINKS: MintedLinks = {};

/** Whether the message needs a link minted (mintLinks): a subscriber recipient, and a version that shows one. */
export function mintsLinks(prepared: Renderable, recipient: Recipient | undefined): boolean {
  const variables = prepared.render.variables;
  return !!recipient?.subscriberId && (readsVariable(variables, "preference_center_url") || readsVariable(variables, "confirmation_url"));
}

/**
 * Every mail to a subscriber may link their preference page (a template
 * footer's {{preference_center_url}}); the signed link is minted only for a
 * version that shows it. A double opt-in confirmation mail's button (the
 * subscribers service sends it with a template that reads
 * {{confirmation_url}}): minted the same way, for the recipient subscriber
 * only, never from a variable the caller gives.
 */
export async function mintLinks(
  deps: Pick<DeliveryDeps, "preferenceUrl" | "confirmationUrl">,
  email: EmailDoc,
  prepared: Renderable,
  recipient: Recipient | undefined,
): Promise<MintedLinks> {
  const subscriberId = recipient?.subscriberId;
  if (!subscriberId) return NO_LINKS;
  const variables = prepared.render.variables;
  return {
    preferenceUrl: readsVariable(variables, "preference_center_url") ? await deps.preferenceUrl?.({ tenant: email.tenant, subscriberId }) : undefined,
    confirmationUrl: readsVariable(variables, "confirmation_url") ? await deps.confirmationUrl?.({ tenant: email.tenant, subscriberId }) : undefined,
  };
}

/**
 * The message of one email to its recipient: the built-ins filled (the
 * caller's variables win over them, as Handlebars is given them; the links
 * minted by mintLinks when mintsLinks says so, else NO_LINKS), rendered
 * with the email's variables, and built with its headers (List-Unsubscribe
 * for marketing mail).
 */
export function prepareMessage(
  deps: Pick<DeliveryDeps, "unsubscribeUrl" | "sender" | "feedbackTag">,
  email: EmailDoc,
  prepared: Renderable,
  recipient: Recipient | undefined,
  category: MailCategory,
  links: MintedLinks,
): PreparedMessage {
  const variables = JSON.parse(email.variables_json) as Record<string, unknown>;
  const unsubscribeUrl =
    category === "marketing"
      ? deps.unsubscribeUrl({
          tenant: email.tenant,
          emailId: email._id,
          subscriberId: recipient?.subscriberId,
          campaignId: email.campaign_id || undefined,
        })
      : undefined;
  const { preferenceUrl, confirmationUrl } = links;
  const builtins: Builtins = { email: email.to };
  if (recipient) builtins.metadata = recipient.metadata;
  if (unsubscribeUrl) builtins.unsubscribe_url = unsubscribeUrl;
  if (preferenceUrl) builtins.preference_center_url = preferenceUrl;
  if (confirmationUrl) builtins.confirmation_url = confirmationUrl;
  const rendered = render(prepared, variables, builtins, { language: recipient?.locale });
  const message = buildMessage({
    emailId: email._id,
    from: senderFor(
      {
        // The send's own fields win, field by field, over its template version's.
        from_email: email.from_email || prepared.template.sender?.fromEmail || undefined,
        from_name: email.from_name ?? (prepared.template.sender?.fromName || undefined),
      },
      deps.sender,
    ),
    to: email.to,
    category: prepared.template.category,
    rendered,
    unsubscribeUrl,
    tenant: email.tenant,
    campaignId: email.campaign_id || undefined,
    replyTo: email.reply_to || prepared.template.sender?.replyTo || undefined,
    feedbackTag: deps.feedbackTag,
  });
  return { message, subject: rendered.subject };
}

/**
 * Renders one message. Variables that make it exceed RENDER_LIMITS fail the
 * email for good (`template_render_failed`; which limit, never a variable's
 * value, in last_error).
 */
function render(prepared: Renderable, variables: Record<string, unknown>, builtins: Builtins, options: MessageOptions) {
  try {
    return prepared.render(variables, builtins, options);
  } catch (err) {
    const detail = err instanceof RenderLimitError ? err.message : errorText(err, builtins.email ?? "");
    throw new SendFailure("permanent", "template_render_failed", { detail: `template could not be rendered: ${detail}` });
  }
}

/** "body line 3: blocks nested 3,000 deep; at most 32 (…)" for each problem. */
function reasonOf(rejected: TemplateRejectedError): string {
  return rejected.problems.map((p) => `${p.part === "html" ? "body" : "subject"}${p.line > 0 ? ` line ${p.line}` : ""}: ${p.message}`).join("; ");
}

/** An error's name and message without addresses, for last_error and logs (never the API). */
function errorText(err: unknown, recipient: string): string {
  return scrubReason(err instanceof Error ? `${err.name}: ${err.message}` : String(err), recipient);
}
