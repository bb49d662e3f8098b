import { api, ok } from "../api/client";
import type { components } from "../api/schema";
import { formatNumber, formatPercent, t } from "../i18n";
import { Badge, CopyButton, Loadable, Page, Section, useLoad } from "../kit";
import { href } from "../router";
import { useSession } from "../session";

type Overview = components["schemas"]["Overview"];

/** The member's time zone, so that "today" and "this month" are theirs. */
function timeZone(): string {
  try {
    return Intl.DateTimeFormat().resolvedOptions().timeZone || "UTC";
  } catch {
    return "UTC";
  }
}

/** Where the other pages are, for a first look around. */
const LINKS = [
  ["/api-keys", "nav.apiKeys"],
  ["/subscribers", "nav.subscribers"],
  ["/templates", "nav.templates"],
  ["/campaigns", "nav.campaigns"],
  ["/emails", "nav.emails"],
  ["/settings/preference-center", "nav.preferenceCenter"],
] as const;

/** The first page: today's and this month's sends, bounce and complaint rates, running campaigns; for a new account, how to send the first email. */
export default function OverviewPage() {
  const session = useSession()!;
  const handle = useLoad(() => ok(api.GET("/api/v1/overview", { params: { query: { tz: timeZone() } } })), []);
  return (
    <Page title={t("overview.title")} description={t("overview.welcome", { name: session.member.name || session.member.email })}>
      <Loadable handle={handle} isEmpty={(data) => data.month.total === 0 && data.running_campaigns.length === 0} empty={<FirstEmail />}>
        {(data) => <Figures overview={data} />}
      </Loadable>
      {/* After the figures have come: shown below the spinner, the links would jump down when they arrive (a layout shift Lighthouse counts). */}
      {handle.result.state === "loading" ? null : (
        <Section title={t("overview.goTo")}>
          <ul class="link-list">
            {LINKS.map(([path, label]) => (
              <li key={path}>
                <a href={href(path)}>{t(label)}</a>
              </li>
            ))}
          </ul>
        </Section>
      )}
    </Page>
  );
}

function rate(value: number | null): string {
  return value === null ? "—" : formatPercent(value);
}

function Figures(props: { overview: Overview }) {
  const { today, month, bounce_rate, complaint_rate, running_campaigns } = props.overview;
  return (
    <>
      <section aria-labelledby="figures-title">
        <h2 id="figures-title" class="visually-hidden">
          {t("overview.figures")}
        </h2>
        <div class="grid">
          <Stat label={t("overview.today")} value={formatNumber(today.total)} detail={t("overview.delivered", { count: formatNumber(today.counts.sent + today.counts.delivered) })} />
          <Stat label={t("overview.month")} value={formatNumber(month.total)} detail={t("overview.delivered", { count: formatNumber(month.counts.sent + month.counts.delivered) })} />
          <Stat label={t("overview.bounceRate")} value={rate(bounce_rate)} detail={t("overview.thisMonth")} />
          <Stat label={t("overview.complaintRate")} value={rate(complaint_rate)} detail={t("overview.thisMonth")} />
        </div>
      </section>
      <Section title={t("overview.running")}>
        {running_campaigns.length === 0 ? (
          <p class="hint">{t("overview.noneRunning")}</p>
        ) : (
          <ul class="link-list">
            {running_campaigns.map((campaign) => (
              <li key={campaign.id}>
                <a href={href(`/campaigns/${campaign.id}`)}>{campaign.name}</a>{" "}
                <Badge tone={campaign.status === "paused" ? "warn" : "info"}>{t(campaign.status === "paused" ? "overview.paused" : "overview.sending")}</Badge>{" "}
                <span class="hint">
                  {t("overview.progress", { done: formatNumber(campaign.counts.sent + campaign.counts.failed + campaign.counts.skipped), total: formatNumber(campaign.counts.total) })}
                </span>
              </li>
            ))}
          </ul>
        )}
      </Section>
    </>
  );
}

function Stat(props: { label: string; value: string; detail: string }) {
  return (
    <div class="stat">
      <span class="label">{props.label}</span>
      <span class="value">{props.value}</span>
      <span class="hint">{props.detail}</span>
    </div>
  );
}

/** A new account's overview: the three steps to a first email. */
function FirstEmail() {
  const curl = `curl -X POST ${location.origin}/api/v1/emails/send \\
  -H "X-API-Key: sk_test_…" -H "Content-Type: application/json" \\
  -d '{"template_slug": "welcome", "to": "you@example.com"}'`;
  return (
    <section class="card first-email" aria-labelledby="first-email-title">
      <h2 id="first-email-title">{t("overview.firstTitle")}</h2>
      <p>{t("overview.firstIntro")}</p>
      <ol>
        <li>
          <a href={href("/api-keys")}>{t("overview.firstKey")}</a> {t("overview.firstKeyText")}
        </li>
        <li>
          <a href={href("/templates")}>{t("overview.firstTemplate")}</a> {t("overview.firstTemplateText")}
        </li>
        <li>{t("overview.firstSend")}</li>
      </ol>
      <pre class="code-block" tabIndex={0} aria-label={t("overview.curlLabel")}>
        <code>{curl}</code>
      </pre>
      <CopyButton text={curl} label={t("overview.copyCurl")} />
      <p>
        <a href="/api/v1/openapi.json">{t("overview.reference")}</a>
      </p>
    </section>
  );
}
