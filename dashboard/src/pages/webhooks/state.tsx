import type { components } from "../../api/schema";
import { t } from "../../i18n";
import { Badge } from "../../kit";
import { ALL_EVENTS } from "./form";

type Webhook = components["schemas"]["Webhook"];
type DeliveryState = components["schemas"]["WebhookDelivery"]["state"];

/** On, off, or turned off by the platform because every attempt failed. */
export function EndpointState(props: { webhook: Webhook }) {
  const w = props.webhook;
  if (w.is_active) return <Badge tone="good">{t("webhooks.state.on")}</Badge>;
  return <Badge tone={w.disabled_reason === "failing" ? "bad" : "neutral"}>{w.disabled_reason === "failing" ? t("webhooks.state.failing") : t("webhooks.state.off")}</Badge>;
}

export function eventsLabel(events: readonly string[]): string {
  return events.includes(ALL_EVENTS) ? t("webhooks.allEvents") : events.join(", ");
}

const DELIVERY_TONES = { pending: "warn", delivered: "good", failed: "bad" } as const;

export function DeliveryStatus(props: { state: DeliveryState }) {
  return <Badge tone={DELIVERY_TONES[props.state]}>{t(`webhooks.delivery.${props.state}`)}</Badge>;
}
