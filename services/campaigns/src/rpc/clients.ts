import { Code, ConnectError, createClient, type Transport } from "@connectrpc/connect";
import { AudienceService, templates, type AudienceFilter } from "@emailsvc/proto";
import { AppError, callHeaders, readError, type CallContext } from "@emailsvc/runtime";

// The services campaigns calls, with the caller's tenant in the headers (so
// another tenant's template or tag is simply unknown).

/** Who a filter reaches (the subscribers service's AudienceService). */
export interface AudienceSource {
  /**
   * Active subscribers matching `filter` now. Rejects with the subscribers
   * service's own INVALID_ARGUMENT (unknown tags, a bad condition), passed on
   * as it is, so that the caller sees which tag or condition is wrong.
   */
  count(call: CallContext, filter: AudienceFilter): Promise<number>;
}

/** Whether a template exists (the templates service). */
export interface TemplateDirectory {
  /** True for a live template of the call's tenant. */
  exists(call: CallContext, templateId: string): Promise<boolean>;
}

const TIMEOUT_MS = 10_000;

function unavailable(service: string, err: unknown): AppError {
  const ce = ConnectError.from(err);
  return new AppError("unavailable", `${service}_unavailable`, `the ${service} service is unavailable (${Code[ce.code]}); try again`);
}

export function audienceClient(transport: Transport): AudienceSource {
  const client = createClient(AudienceService, transport);
  return {
    async count(call, filter) {
      try {
        const res = await client.countAudience({ filter }, { headers: callHeaders(call), timeoutMs: TIMEOUT_MS });
        return Number(res.count);
      } catch (err) {
        // The caller's mistake, explained by the service that knows the tags:
        // passed on with its code, the fields named as the caller wrote them
        // (AudienceService's `filter` is a campaign's `tag_filter`).
        const info = readError(err);
        if (info.code === Code.InvalidArgument) {
          throw new AppError("invalid", info.errorCode, info.message, {
            fieldViolations: info.fieldViolations.map((v) => ({
              field: v.field.replace(/^filter(?=\.|$)/, "tag_filter"),
              description: v.description,
            })),
          });
        }
        throw unavailable("subscribers", err);
      }
    },
  };
}

export function templateDirectory(transport: Transport): TemplateDirectory {
  const client = createClient(templates.TemplateService, transport);
  return {
    async exists(call, templateId) {
      try {
        await client.getTemplate({ id: templateId }, { headers: callHeaders(call), timeoutMs: TIMEOUT_MS });
        return true;
      } catch (err) {
        const ce = ConnectError.from(err);
        if (ce.code === Code.NotFound || ce.code === Code.InvalidArgument) return false;
        throw unavailable("templates", err);
      }
    },
  };
}
