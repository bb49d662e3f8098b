import { useState } from "preact/hooks";
import { sessionApi } from "../api/session";
import { t } from "../i18n";
import { Button, Field, FormProblem, formValue, Page, submitLabel, useSubmit } from "../kit";
import { href } from "../router";

export default function ForgotPassword() {
  const submit = useSubmit();
  const [sent, setSent] = useState(false);
  const onSubmit = async (event: Event) => {
    event.preventDefault();
    const form = event.currentTarget as HTMLFormElement;
    const done = await submit.run(async () => (await sessionApi.requestReset(formValue(form, "email")), true));
    if (done) setSent(true);
  };
  return (
    <div class="auth-card">
      <Page title={t("forgot.title")}>
        {sent ? (
          // The same words whether or not the address is a member's: the API does not tell either.
          <p class="alert alert-info" role="status">
            {t("forgot.sent")}
          </p>
        ) : (
          <form onSubmit={onSubmit}>
            <p>{t("forgot.intro")}</p>
            <Field label={t("field.email")}>
              <input name="email" type="email" autoComplete="username" required />
            </Field>
            <FormProblem problem={submit.problem} />
            <Button type="submit" variant="primary" busy={submit.busy}>
              {submitLabel(submit.busy, t("forgot.submit"))}
            </Button>
          </form>
        )}
        <p>
          <a href={href("/sign-in")}>{t("forgot.back")}</a>
        </p>
      </Page>
    </div>
  );
}
