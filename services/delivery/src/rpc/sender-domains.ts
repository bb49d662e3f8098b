import type { ConnectRouter } from "@connectrpc/connect";
import { create } from "@bufbuild/protobuf";
import { timestampFromMs } from "@bufbuild/protobuf/wkt";
import { delivery } from "@emailsvc/proto";
import { readCallContext, type CallContext } from "@emailsvc/tenancy";
import type { RecordState, SenderDomainStatus } from "../domain/sender-domain.js";
import type { SenderDomainDoc } from "../storage/documents.js";
import { createSenderDomain } from "../usecases/create-sender-domain.js";
import { deleteSenderDomain } from "../usecases/delete-sender-domain.js";
import type { Scope } from "../usecases/deps.js";
import { getSenderDomain } from "../usecases/get-sender-domain.js";
import { listSenderDomains } from "../usecases/list-sender-domains.js";
import type { SenderDomainDeps, SigningKeyCache } from "../usecases/sender-domains.js";
import { verifySenderDomain } from "../usecases/verify-sender-domain.js";

// SenderDomainService: proto in, use case, proto out. Never a private key out.

const STATUS: Record<SenderDomainStatus, delivery.SenderDomainStatus> = {
  pending: delivery.SenderDomainStatus.PENDING,
  verified: delivery.SenderDomainStatus.VERIFIED,
  failed: delivery.SenderDomainStatus.FAILED,
};

const RECORD_STATE: Record<RecordState, delivery.DnsRecordState> = {
  not_checked: delivery.DnsRecordState.NOT_CHECKED,
  verified: delivery.DnsRecordState.VERIFIED,
  missing: delivery.DnsRecordState.MISSING,
  mismatch: delivery.DnsRecordState.MISMATCH,
};

const ts = (ms: number | null) => (ms === null ? undefined : timestampFromMs(ms));

export function senderDomainToProto(doc: SenderDomainDoc): delivery.SenderDomain {
  return create(delivery.SenderDomainSchema, {
    id: doc._id,
    name: doc.name,
    status: STATUS[doc.status],
    records: doc.records.map((record) => ({
      purpose: record.purpose,
      type: record.type,
      name: record.name,
      value: record.value,
      required: record.required,
      state: RECORD_STATE[record.state],
      found: record.found,
    })),
    failureReason: doc.failure_reason,
    createdAt: timestampFromMs(doc.created_at),
    verifiedAt: ts(doc.verified_at),
    lastCheckedAt: ts(doc.last_checked_at),
    nextCheckAt: ts(doc.next_check_at),
  });
}

export function senderDomainRoutes(deps: SenderDomainDeps, keys: SigningKeyCache, scopeOf: (call: CallContext) => Scope): (router: ConnectRouter) => void {
  return (router) => {
    router.service(delivery.SenderDomainService, {
      async createSenderDomain(req, ctx) {
        return { domain: senderDomainToProto(await createSenderDomain(deps, scopeOf(readCallContext(ctx)), { name: req.name })) };
      },
      async getSenderDomain(req, ctx) {
        return { domain: senderDomainToProto(await getSenderDomain(scopeOf(readCallContext(ctx)), req.id)) };
      },
      async listSenderDomains(req, ctx) {
        const page = await listSenderDomains(scopeOf(readCallContext(ctx)), { limit: req.limit, cursor: req.cursor });
        return { domains: page.items.map(senderDomainToProto), nextCursor: page.nextCursor };
      },
      async deleteSenderDomain(req, ctx) {
        await deleteSenderDomain(scopeOf(readCallContext(ctx)), keys, req.id);
        return {};
      },
      async verifySenderDomain(req, ctx) {
        return { domain: senderDomainToProto(await verifySenderDomain(deps, scopeOf(readCallContext(ctx)), keys, req.id)) };
      },
    });
  };
}
