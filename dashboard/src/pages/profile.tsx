import { useState } from "preact/hooks";
import { sessionApi } from "../api/session";
import { t } from "../i18n";
import { Button, ConfirmDialog, FormProblem, Page, Section, useSubmit } from "../kit";
import { navigate } from "../router";
import { setSession, useSession } from "../session";
import { PasskeysSection } from "./profile-passkeys";

export default function Profile() {
  const session = useSession()!;
  const submit = useSubmit();
  const [asking, setAsking] = useState(false);
  const everywhere = async () => {
    const done = await submit.run(async () => (await sessionApi.signOutEverywhere(), true));
    setAsking(false);
    if (!done) return;
    setSession(undefined);
    navigate("/sign-in", { replace: true });
  };
  return (
    <Page title={t("profile.title")}>
      <Section title={t("profile.you")}>
        <dl class="facts">
          <dt>{t("field.name")}</dt>
          <dd>{session.member.name}</dd>
          <dt>{t("field.email")}</dt>
          <dd>{session.member.email}</dd>
          <dt>{t("field.role")}</dt>
          <dd>{t(`role.${session.member.role}`)}</dd>
          <dt>{t("profile.account")}</dt>
          <dd>
            {session.account.name} ({t(`plan.${session.account.plan}`)})
          </dd>
        </dl>
      </Section>
      <PasskeysSection />
      <Section title={t("profile.sessions")}>
        <p>{t("profile.everywhereIntro")}</p>
        <FormProblem problem={submit.problem} />
        <Button variant="danger" onClick={() => setAsking(true)}>
          {t("profile.everywhere")}
        </Button>
      </Section>
      <ConfirmDialog open={asking} title={t("profile.everywhere")} confirmLabel={t("profile.everywhere")} danger busy={submit.busy} onConfirm={everywhere} onCancel={() => setAsking(false)}>
        <p>{t("profile.everywhereConfirm")}</p>
      </ConfirmDialog>
    </Page>
  );
}
