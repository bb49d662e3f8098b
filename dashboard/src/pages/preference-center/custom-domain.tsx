import { useCallback, useState } from "preact/hooks";
import { api, ApiProblem, currentMode, ok } from "../../api/client";
import type { components } from "../../api/schema";
import { formatDateTime, t } from "../../i18n";
import { Badge, Button, ConfirmDialog, CopyButton, Field, FormProblem, formValue, Loadable, notify, Section, submitLabel, useLoad, usePoll, useSubmit } from "../../kit";
import { useCanWrite, useSession } from "../../session";

type Domain = components["schemas"]["CustomDomain"];
type State = Domain["state"];

const PATH = "/api/v1/settings/preference-center/custom-domain";
/** How often the page asks while the platform works on the domain. */
const POLL_MS = 2000;
const TONES: Record<State, "warn" | "info" | "good" | "bad"> = { pending_dns: "warn", issuing: "info", active: "good", failed: "bad" };

/** Whether the platform still moves the domain by itself (checks DNS, issues, retries a failure). */
function moving(domain: Domain | null): boolean {
  if (!domain) return false;
  return domain.state === "pending_dns" || domain.state === "issuing" || (domain.state === "failed" && domain.next_check_at !== null);
}

/**
 * The account's domain; null when it has none (the API's 404
 * `custom_domain_not_found`), "off" on a deployment without custom domains
 * (503 `custom_domains_not_enabled`, e.g. `npm start`): neither is an error here.
 */
async function loadDomain(): Promise<Domain | null | "off"> {
  try {
    return await ok(api.GET(PATH, {}));
  } catch (err) {
    if (err instanceof ApiProblem && err.code === "custom_domain_not_found") return null;
    if (err instanceof ApiProblem && err.code === "custom_domains_not_enabled") return "off";
    throw err;
  }
}

/** Settings > Preference Center > Custom Domain: the CNAME to publish, the plan gate, the state as it moves, remove. */
export default function CustomDomain() {
  const session = useSession()!;
  const canWrite = useCanWrite("settings");
  const handle = useLoad(loadDomain, []);
  const current = handle.result.state === "ready" && handle.result.data !== "off" ? handle.result.data : null;
  const refresh = useCallback(() => handle.reload(), [handle.reload]);
  usePoll(moving(current), POLL_MS, refresh);
  const submit = useSubmit();
  const [removing, setRemoving] = useState(false);
  const professional = session.account.plan === "professional";
  const live = currentMode() === "live";
  const disabled = !canWrite || !professional || !live;

  const onSubmit = async (event: Event) => {
    event.preventDefault();
    const domain = formValue(event.currentTarget as HTMLFormElement, "domain");
    const saved = await submit.run(() => ok(api.PUT(PATH, { body: { domain } })));
    if (!saved) return;
    handle.set(saved);
    notify(t("customDomain.saved"));
  };
  const remove = async () => {
    const done = await submit.run(async () => (await ok(api.DELETE(PATH, {})), true));
    setRemoving(false);
    if (!done) return;
    handle.set(null);
    notify(t("customDomain.removed"));
  };

  return (
    <Section title={t("customDomain.title")} id="custom-domain">
      <p>{t("customDomain.intro")}</p>
      {!professional ? (
        <div class="alert alert-info" role="note">
          <p>
            <strong>{t("customDomain.planTitle")}</strong> {t("customDomain.planText", { plan: t(`plan.${session.account.plan}`) })}
          </p>
        </div>
      ) : null}
      {professional && !live ? (
        <p class="alert alert-info" role="note">
          {t("customDomain.liveOnly")}
        </p>
      ) : null}
      <Loadable handle={handle}>
        {(domain) =>
          domain === "off" ? (
            <p class="alert alert-info" role="note">
              {t("customDomain.off")}
            </p>
          ) : (
            <>
              {domain ? <DomainState domain={domain} polling={moving(domain)} /> : <p class="hint">{t("customDomain.none")}</p>}
              {canWrite ? (
                <form onSubmit={onSubmit} class="toolbar">
                  <Field label={t("customDomain.domain")} hint={t("customDomain.domainHint")} error={submit.problem?.field("domain")}>
                    <input name="domain" required maxLength={300} disabled={disabled} placeholder="preferences.example.com" autoComplete="off" spellcheck={false} />
                  </Field>
                  <Button type="submit" variant="primary" busy={submit.busy} disabled={disabled}>
                    {submitLabel(submit.busy, t(domain ? "customDomain.replace" : "customDomain.set"))}
                  </Button>
                  {domain ? (
                    <Button variant="danger" disabled={!live} onClick={() => setRemoving(true)}>
                      {t("customDomain.remove")}
                    </Button>
                  ) : null}
                </form>
              ) : null}
              <FormProblem problem={submit.problem} />
              <ConfirmDialog
                open={removing}
                title={t("customDomain.removeTitle")}
                confirmLabel={t("customDomain.remove")}
                danger
                busy={submit.busy}
                onConfirm={remove}
                onCancel={() => setRemoving(false)}
              >
                <p>{t("customDomain.removeText", { domain: domain?.domain ?? "" })}</p>
              </ConfirmDialog>
            </>
          )
        }
      </Loadable>
    </Section>
  );
}

function DomainState(props: { domain: Domain; polling: boolean }) {
  const { domain } = props;
  const record = `${domain.dns_record.name}. CNAME ${domain.dns_record.target}.`;
  return (
    <div>
      <dl class="facts">
        <dt>{t("customDomain.domain")}</dt>
        <dd>
          <code>{domain.domain}</code>
        </dd>
        <dt>{t("customDomain.state")}</dt>
        <dd aria-live="polite">
          <Badge tone={TONES[domain.state]}>{t(`customDomain.state.${domain.state}`)}</Badge> {t(`customDomain.stateText.${domain.state}`)}
        </dd>
        {domain.reason ? (
          <>
            <dt>{t("customDomain.reason")}</dt>
            <dd>{domain.reason}</dd>
          </>
        ) : null}
        {domain.url ? (
          <>
            <dt>{t("customDomain.url")}</dt>
            <dd>
              <code>{domain.url}</code>
            </dd>
          </>
        ) : null}
        {domain.last_check_at ? (
          <>
            <dt>{t("customDomain.lastCheck")}</dt>
            <dd>{formatDateTime(domain.last_check_at)}</dd>
          </>
        ) : null}
        {domain.next_check_at ? (
          <>
            <dt>{t("customDomain.nextCheck")}</dt>
            <dd>{formatDateTime(domain.next_check_at)}</dd>
          </>
        ) : null}
      </dl>
      <h3>{t("customDomain.recordTitle")}</h3>
      <p>{t("customDomain.recordText")}</p>
      <div class="record">
        <dl class="facts">
          <dt>{t("customDomain.recordName")}</dt>
          <dd>
            <code>{domain.dns_record.name}</code>
          </dd>
          <dt>{t("customDomain.recordType")}</dt>
          <dd>
            <code>{domain.dns_record.type}</code>
          </dd>
          <dt>{t("customDomain.recordTarget")}</dt>
          <dd>
            <code>{domain.dns_record.target}</code>
          </dd>
        </dl>
        <CopyButton text={record} label={t("customDomain.copyRecord")} />
      </div>
      {props.polling ? <p class="hint">{t("customDomain.polling")}</p> : null}
    </div>
  );
}
