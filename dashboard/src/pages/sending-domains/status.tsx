import type { components } from "../../api/schema";
import { t } from "../../i18n";
import { Badge } from "../../kit";

type DomainState = components["schemas"]["SenderDomain"]["status"];
type RecordState = components["schemas"]["SenderDnsRecord"]["status"];

const DOMAIN_TONES = { pending: "warn", verified: "good", failed: "bad" } as const;
const RECORD_TONES = { not_checked: "neutral", verified: "good", missing: "bad", mismatch: "bad" } as const;

/** A sending domain's state in words (pending, verified, failed). */
export function DomainStatus(props: { status: DomainState }) {
  return <Badge tone={DOMAIN_TONES[props.status]}>{t(`domains.status.${props.status}`)}</Badge>;
}

/** What the last check found for one DNS record. */
export function RecordStatus(props: { status: RecordState }) {
  return <Badge tone={RECORD_TONES[props.status]}>{t(`domains.record.status.${props.status}`)}</Badge>;
}
