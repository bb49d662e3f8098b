import { useState } from "preact/hooks";
import { sessionApi } from "../api/session";
import { t } from "../i18n";
import { Button, Field, FormProblem, formValue, Page, submitLabel, useSubmit } from "../kit";
import { href, useLocation } from "../router";
import { PASSWORD_MIN, tokenFromHash } from "./accept";

export default function ResetPassword() {
  const loc = useLocation();
  const token = tokenFromHash(loc.hash);
  const submit = useSubmit();
  const [done, setDone] = useState(false);
  const onSubmit = async (event: Event) => {
    event.preventDefault();
    const form = event.currentTarget as HTMLFormElement;
    const ok = await submit.run(async () => (await sessionApi.completeReset(token, formValue(form, "password")), true));
    if (ok) setDone(true);
  };
  return (
    <div class="auth-card">
      <Page title={t("reset.title")}>
        {done ? (
          <p class="alert alert-info" role="status">
            {t("reset.done")} <a href={href("/sign-in")}>{t("signIn.submit")}</a>
          </p>
        ) : !token ? (
          <p class="alert alert-error" role="alert">
            {t("token.missing")}
          </p>
        ) : (
          <form onSubmit={onSubmit}>
            <Field label={t("field.newPassword")} hint={t("field.passwordHint", { min: PASSWORD_MIN })} error={submit.problem?.field("password")}>
              <input name="password" type="password" autoComplete="new-password" minLength={PASSWORD_MIN} maxLength={256} required />
            </Field>
            <FormProblem problem={submit.problem} />
            <Button type="submit" variant="primary" busy={submit.busy}>
              {submitLabel(submit.busy, t("reset.submit"))}
            </Button>
          </form>
        )}
      </Page>
    </div>
  );
}
