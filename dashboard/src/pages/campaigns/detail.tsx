import { Fragment } from "preact";
import { useState } from "preact/hooks";
import { api, ok } from "../../api/client";
import { formatDateTime, formatNumber, t } from "../../i18n";
import { Button, ConfirmDialog, FormProblem, Loadable, notify, Page, Section, useLoad, usePoll, useSubmit } from "../../kit";
import { EmailTable } from "../emails/table";
import { href, navigate } from "../../router";
import type { PageProps } from "../../routes";
import { useCanWrite } from "../../session";
import { CampaignStatusBadge, type Campaign } from "./status";

/** States in which the numbers still move: the page asks again every second. */
const MOVING: ReadonlySet<Campaign["status"]> = new Set(["scheduled", "sending"]);

export default function CampaignPage(props: PageProps) {
  const id = props.params.id!;
  const handle = useLoad(() => ok(api.GET("/api/v1/campaigns/{id}", { params: { path: { id } } })), [id]);
  const campaign = handle.result.state === "ready" ? handle.result.data : undefined;
  // Polling also covers what is still queued after a pause or a cancel: counts move until it has an outcome.
  const moving = !!campaign && (MOVING.has(campaign.status) || ((campaign.status === "paused" || campaign.status === "cancelled") && campaign.counts.queued > 0));
  usePoll(moving, 1000, handle.reload);
  return (
    <Page title={campaign?.name ?? t("campaigns.campaign")} actions={<a href={href("/campaigns")}>{t("campaigns.back")}</a>}>
      <Loadable handle={handle}>{(c) => <CampaignView campaign={c} onChange={handle.set} />}</Loadable>
    </Page>
  );
}

type Action = "send" | "pause" | "resume" | "cancel" | "delete";

function CampaignView(props: { campaign: Campaign; onChange: (c: Campaign) => void }) {
  const c = props.campaign;
  const canWrite = useCanWrite("campaigns");
  const submit = useSubmit();
  const [confirm, setConfirm] = useState<Action | undefined>();
  const run = async (action: Action) => {
    setConfirm(undefined);
    const path = { params: { path: { id: c.id } } };
    if (action === "delete") {
      const done = await submit.run(async () => (await ok(api.DELETE("/api/v1/campaigns/{id}", path)), true));
      if (done) {
        notify(t("campaigns.deleted"));
        navigate("/campaigns");
      }
      return;
    }
    const next = await submit.run(() => {
      if (action === "send") return ok(api.POST("/api/v1/campaigns/{id}/send", { ...path, body: {} }));
      if (action === "pause") return ok(api.POST("/api/v1/campaigns/{id}/pause", path));
      if (action === "resume") return ok(api.POST("/api/v1/campaigns/{id}/resume", path));
      return ok(api.POST("/api/v1/campaigns/{id}/cancel", path));
    });
    if (next) props.onChange(next);
  };
  const actions: Action[] = [];
  if (c.status === "draft") actions.push("send", "delete");
  if (c.status === "sending") actions.push("pause");
  if (c.status === "paused") actions.push("resume");
  if (c.status === "scheduled" || c.status === "sending" || c.status === "paused") actions.push("cancel");
  const needsConfirm = (a: Action) => a === "send" || a === "cancel" || a === "delete";

  return (
    <>
      <Section title={t("campaigns.overview")}>
        <dl class="facts">
          <dt>{t("campaigns.statusLabel")}</dt>
          <dd>
            <CampaignStatusBadge status={c.status} />
          </dd>
          <dt>{t("campaigns.template")}</dt>
          <dd>
            <a href={href(`/templates/${c.template_id}`)}>{c.template_id}</a>
            {c.template_version !== null ? ` (${t("templates.versionBadge", { version: c.template_version })})` : null}
          </dd>
          <dt>{t("campaigns.audience")}</dt>
          <dd>{describeFilter(c)}</dd>
          {c.send_at ? (
            <>
              <dt>{t("campaigns.sendAt")}</dt>
              <dd>{formatDateTime(c.send_at)}</dd>
            </>
          ) : null}
          {c.started_at ? (
            <>
              <dt>{t("campaigns.startedAt")}</dt>
              <dd>{formatDateTime(c.started_at)}</dd>
            </>
          ) : null}
          {c.finished_at ? (
            <>
              <dt>{t("campaigns.finishedAt")}</dt>
              <dd>{formatDateTime(c.finished_at)}</dd>
            </>
          ) : null}
        </dl>
        {canWrite && actions.length > 0 ? (
          <div class="page-actions">
            {actions.map((a) => (
              <Button key={a} variant={a === "cancel" || a === "delete" ? "danger" : a === "send" ? "primary" : undefined} busy={submit.busy} onClick={() => (needsConfirm(a) ? setConfirm(a) : void run(a))}>
                {t(`campaigns.action.${a}`)}
              </Button>
            ))}
          </div>
        ) : null}
        <FormProblem problem={submit.problem} />
      </Section>
      <Progress campaign={c} />
      <Failures campaign={c} />
      <ConfirmDialog
        open={confirm !== undefined}
        title={confirm ? t(`campaigns.action.${confirm}`) : ""}
        confirmLabel={confirm ? t(`campaigns.action.${confirm}`) : ""}
        danger={confirm === "cancel" || confirm === "delete"}
        busy={submit.busy}
        onConfirm={() => confirm && void run(confirm)}
        onCancel={() => setConfirm(undefined)}
      >
        <p>{confirm === "send" || confirm === "cancel" || confirm === "delete" ? t(`campaigns.confirm.${confirm}`, { name: c.name }) : null}</p>
      </ConfirmDialog>
    </>
  );
}

function describeFilter(c: Campaign): string {
  const f = c.tag_filter;
  const parts: string[] = [];
  const include = f.include_tags ?? [];
  parts.push(include.length === 0 ? t("campaigns.filter.everyone") : t(f.match === "all" ? "campaigns.filter.all" : "campaigns.filter.any", { tags: include.join(", ") }));
  if ((f.exclude_tags ?? []).length > 0) parts.push(t("campaigns.filter.exclude", { tags: f.exclude_tags!.join(", ") }));
  if ((f.metadata ?? []).length > 0) parts.push(t("campaigns.filter.conditions", { count: f.metadata!.length }));
  return parts.join("; ");
}

const SEGMENTS = ["sent", "failed", "skipped", "queued", "pending"] as const;

/**
 * Where the recipients stand: a bar (for the eye) and the same numbers as
 * text, which always add up to the total (the API keeps
 * pending + queued + sent + failed + skipped = total).
 */
function Progress(props: { campaign: Campaign }) {
  const counts = props.campaign.counts;
  const total = counts.total;
  const done = counts.sent + counts.failed + counts.skipped;
  return (
    <Section title={t("campaigns.progress")}>
      {props.campaign.status === "draft" || props.campaign.status === "scheduled" ? (
        <p>{t("campaigns.notStarted")}</p>
      ) : (
        <>
          <p class="progress-summary" role="status">
            {t("campaigns.progressText", { done: formatNumber(done), total: formatNumber(total) })}
            {counts.snapshot_complete ? null : ` ${t("campaigns.snapshotRunning")}`}
          </p>
          <div class="progress-bar" aria-hidden="true">
            {SEGMENTS.map((s) =>
              counts[s] > 0 ? <span key={s} class={`progress-${s}`} style={{ width: `${(counts[s] / Math.max(total, 1)) * 100}%` }} /> : null,
            )}
          </div>
          <dl class="facts counts" aria-label={t("campaigns.counts")}>
            {SEGMENTS.map((s) => (
              <Fragment key={s}>
                <dt>
                  <span class={`legend-swatch progress-${s}`} aria-hidden="true" /> {t(`campaigns.count.${s}`)}
                </dt>
                <dd data-count={s}>{formatNumber(counts[s])}</dd>
              </Fragment>
            ))}
            <dt>{t("campaigns.count.total")}</dt>
            <dd data-count="total">{formatNumber(total)}</dd>
          </dl>
        </>
      )}
    </Section>
  );
}

const SKIP_REASONS = ["unsubscribed", "erased", "suppressed", "cancelled"] as const;

/** What did not go out, and why, as far as the API says (counts by reason; the campaign's own failure). */
function Failures(props: { campaign: Campaign }) {
  const c = props.campaign;
  const skipped = c.counts.skipped_by_reason;
  if (!c.failure_reason && c.counts.failed === 0 && c.counts.skipped === 0) return null;
  return (
    <Section title={t("campaigns.failures")}>
      {c.failure_reason ? (
        <p class="alert alert-error">
          {t("campaigns.failedBecause")} <code>{c.failure_reason}</code>: {t(`campaigns.failure.${c.failure_reason === "schedule_missed" ? "schedule_missed" : "template_not_found"}`)}
        </p>
      ) : null}
      <dl class="facts">
        <dt>{t("campaigns.count.failed")}</dt>
        <dd>{formatNumber(c.counts.failed)}</dd>
        {SKIP_REASONS.map((r) => (
          <Fragment key={r}>
            <dt>{t(`campaigns.skipped.${r}`)}</dt>
            <dd>{formatNumber(skipped[r])}</dd>
          </Fragment>
        ))}
      </dl>
      {c.counts.failed > 0 ? <FailedEmails campaign={c} /> : null}
    </Section>
  );
}

/** The campaign's emails that failed or bounced, each with its reason (GET /emails?campaign_id=…&status=…). */
function FailedEmails(props: { campaign: Campaign }) {
  const id = props.campaign.id;
  const handle = useLoad(async () => {
    const pages = await Promise.all(
      (["failed", "bounced"] as const).map((status) => ok(api.GET("/api/v1/emails", { params: { query: { campaign_id: id, status, limit: 20 } } }))),
    );
    return { items: pages.flatMap((p) => p.items), more: pages.some((p) => p.next_cursor !== null) };
  }, [id, props.campaign.counts.failed]);
  return (
    <Loadable handle={handle} isEmpty={(d) => d.items.length === 0}>
      {(data) => (
        <>
          <EmailTable label={t("campaigns.failedEmails")} emails={data.items} columns={["to", "status", "reason"]} />
          {data.more ? (
            <p>
              <a href={href("/emails", { campaign_id: id, status: "failed" })}>{t("campaigns.allFailures")}</a>
            </p>
          ) : null}
        </>
      )}
    </Loadable>
  );
}
