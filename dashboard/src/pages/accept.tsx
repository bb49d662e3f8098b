import { sessionApi } from "../api/session";
import { t } from "../i18n";
import { Button, Field, FormProblem, formValue, Page, submitLabel, useSubmit } from "../kit";
import { navigate, useLocation } from "../router";
import { setSession } from "../session";

export const PASSWORD_MIN = 10;

/** The one-time token of a mailed link: after `#token=`, so it never reached a server's log. */
export function tokenFromHash(hash: string): string {
  return new URLSearchParams(hash).get("token") ?? "";
}

/**
 * Accepting an invitation (/accept, mailed) or the first start's setup link
 * (/setup, printed by `npm start`: no address is known yet, so the new owner
 * gives one). Both end signed in.
 */
export default function Accept() {
  const loc = useLocation();
  const setup = loc.path === "/setup";
  const token = tokenFromHash(loc.hash);
  const submit = useSubmit();
  const onSubmit = async (event: Event) => {
    event.preventDefault();
    const form = event.currentTarget as HTMLFormElement;
    const info = await submit.run(() =>
      sessionApi.accept({ token, name: formValue(form, "name"), password: formValue(form, "password"), ...(setup ? { email: formValue(form, "email") } : {}) }),
    );
    if (!info) return;
    // The token is spent: drop it from the address bar and the history.
    history.replaceState(null, "", location.pathname);
    setSession(info);
    navigate("/", { replace: true });
  };
  return (
    <div class="auth-card">
      <Page title={t(setup ? "accept.setupTitle" : "accept.title")} description={t(setup ? "accept.setupIntro" : "accept.intro")}>
        {!token ? (
          <p class="alert alert-error" role="alert">
            {t("token.missing")}
          </p>
        ) : (
          <form onSubmit={onSubmit}>
            {setup ? (
              <Field label={t("field.email")} error={submit.problem?.field("email")}>
                <input name="email" type="email" autoComplete="username" required />
              </Field>
            ) : null}
            <Field label={t("field.name")} error={submit.problem?.field("name")}>
              <input name="name" autoComplete="name" maxLength={200} required />
            </Field>
            <Field label={t("field.newPassword")} hint={t("field.passwordHint", { min: PASSWORD_MIN })} error={submit.problem?.field("password")}>
              <input name="password" type="password" autoComplete="new-password" minLength={PASSWORD_MIN} maxLength={256} required />
            </Field>
            <FormProblem problem={submit.problem} />
            <Button type="submit" variant="primary" busy={submit.busy}>
              {submitLabel(submit.busy, t("accept.submit"))}
            </Button>
          </form>
        )}
      </Page>
    </div>
  );
}
