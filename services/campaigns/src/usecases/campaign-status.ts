import { withOutbox } from "@emailsvc/outbox";
import { newId } from "@emailsvc/ids";
import type { TenantUpdate } from "@emailsvc/storage";
import type { CampaignStatus } from "../domain/campaign.js";
import type { CampaignDoc, CampaignOutboxEntry } from "../storage/documents.js";
import type { Deps } from "./deps.js";

// Every change of a campaign's status is one write that also fills its outbox
// with the campaign.status_changed event (delivery keeps cancelled and paused
// campaigns from it), published right after the write.

/** A change of status with its campaign.status_changed entry, in one write. */
export function statusUpdate(status: CampaignStatus, now: number, set: Partial<CampaignDoc> = {}): TenantUpdate<CampaignDoc> {
  const entry: CampaignOutboxEntry = { id: newId("evt"), at: now, status };
  return withOutbox<CampaignDoc, CampaignOutboxEntry>({ $set: { ...set, status } }, [entry], now);
}

/** Publishes the outbox a status write filled (a crash before is left to the relay's sweep). */
export async function published(deps: Deps, doc: CampaignDoc): Promise<CampaignDoc> {
  await deps.relay?.afterWrite(doc);
  return doc;
}
