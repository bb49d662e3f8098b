import { AppError } from "@emailsvc/errors";
import { newId } from "@emailsvc/ids";
import { DuplicateKeyError } from "@emailsvc/storage";
import { seal } from "@emailsvc/tokens";
import { checkSenderDomainName, generateDkimKeys, recordsFor } from "../domain/sender-domain.js";
import type { SenderDomainDoc } from "../storage/documents.js";
import type { Scope } from "./deps.js";
import { DKIM_KEY_PURPOSE, SENDER_DOMAIN_ID_PREFIX, type SenderDomainDeps } from "./sender-domains.js";

/**
 * Adds a sending domain to the tenant: new RSA 2048 and Ed25519 key pairs
 * (private keys sealed under SEALING_KEYS before they are stored), the records
 * to publish, and the domain pending, its first re-check a minute away. A
 * name the tenant has already is a 409 naming it; nothing is stored for a
 * refused name.
 */
export async function createSenderDomain(deps: SenderDomainDeps, scope: Scope, input: { name: unknown }): Promise<SenderDomainDoc> {
  const name = checkSenderDomainName(input.name, deps.platformHosts);
  const existing = await scope.senderDomains.findOne({ name });
  if (existing) throw exists(existing._id);
  const keys = await generateDkimKeys();
  const now = deps.now();
  const doc: Omit<SenderDomainDoc, "tenant"> = {
    _id: newId(SENDER_DOMAIN_ID_PREFIX),
    name,
    status: "pending",
    records: recordsFor(name, keys, deps.dnsSettings),
    rsa: { selector: keys.rsa.selector, public_key: keys.rsa.publicKey, private_key_sealed: seal(deps.sealingKeys, DKIM_KEY_PURPOSE, keys.rsa.privateKeyPem) },
    ed25519: { selector: keys.ed25519.selector, public_key: keys.ed25519.publicKey, private_key_sealed: seal(deps.sealingKeys, DKIM_KEY_PURPOSE, keys.ed25519.privateKeyPem) },
    failure_reason: "the records are not checked yet",
    created_at: now,
    pending_since: now,
    checks: 0,
    verified_at: null,
    last_checked_at: null,
    next_check_at: now + deps.recheck.firstDelayMs,
  };
  try {
    await scope.senderDomains.insertOne(doc);
  } catch (err) {
    if (err instanceof DuplicateKeyError) {
      // A concurrent request for the same name won the unique index.
      const winner = await scope.senderDomains.findOne({ name });
      throw exists(winner?._id ?? "");
    }
    throw err;
  }
  return { ...doc, tenant: scope.tenant } as SenderDomainDoc;
}

function exists(existingId: string): AppError {
  return new AppError("conflict", "sender_domain_exists", "this sending domain is added already", {
    ...(existingId ? { existingId } : {}),
    fieldViolations: [{ field: "name", description: "is added already" }],
  });
}
