import { t } from "../i18n";
import { Page } from "../kit";
import { href } from "../router";

export default function NotFound() {
  return (
    <Page title={t("notFound.title")}>
      <p>{t("notFound.text")}</p>
      <p>
        <a href={href("/")}>{t("notFound.home")}</a>
      </p>
    </Page>
  );
}
