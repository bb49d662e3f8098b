import { passkeysSupported, signInWithPasskey } from "../api/passkeys";
import { sessionApi } from "../api/session";
import { t } from "../i18n";
import { Button, Field, FormProblem, formValue, Page, submitLabel, useSubmit } from "../kit";
import { href, navigate, useLocation } from "../router";
import { setSession } from "../session";

/** Where to go after signing in: a path of the app only (never another site). */
export function safeNext(next: string | null): string {
  return next && next.startsWith("/") && !next.startsWith("//") && !next.includes("\\") ? next : "/";
}

export default function SignIn() {
  const loc = useLocation();
  const submit = useSubmit();
  const withPasskey = useSubmit();
  const ended = loc.query.get("ended") === "1";
  const onSubmit = async (event: Event) => {
    event.preventDefault();
    const form = event.currentTarget as HTMLFormElement;
    const info = await submit.run(() => sessionApi.signIn(formValue(form, "email"), formValue(form, "password")));
    if (!info) return;
    setSession(info);
    navigate(safeNext(loc.query.get("next")), { replace: true });
  };
  const onPasskey = async () => {
    const info = await withPasskey.run(signInWithPasskey);
    if (!info) return;
    setSession(info);
    navigate(safeNext(loc.query.get("next")), { replace: true });
  };
  return (
    <div class="auth-card">
      <Page title={t("signIn.title")}>
        {ended ? (
          <p class="alert alert-info" role="status">
            {t("signIn.ended")}
          </p>
        ) : null}
        <form onSubmit={onSubmit} noValidate={false}>
          <Field label={t("field.email")}>
            <input name="email" type="email" autoComplete="username" required />
          </Field>
          <Field label={t("field.password")}>
            <input name="password" type="password" autoComplete="current-password" required />
          </Field>
          <FormProblem problem={submit.problem} />
          <Button type="submit" variant="primary" busy={submit.busy}>
            {submitLabel(submit.busy, t("signIn.submit"))}
          </Button>
        </form>
        {passkeysSupported() ? (
          <div class="passkey-sign-in">
            <FormProblem problem={withPasskey.problem} />
            <Button onClick={onPasskey} busy={withPasskey.busy}>
              {submitLabel(withPasskey.busy, t("signIn.passkey"))}
            </Button>
          </div>
        ) : null}
        <p>
          <a href={href("/forgot-password")}>{t("signIn.forgot")}</a>
        </p>
      </Page>
    </div>
  );
}
