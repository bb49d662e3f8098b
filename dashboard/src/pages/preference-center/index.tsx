import { t } from "../../i18n";
import { Page } from "../../kit";
import { href } from "../../router";
import Branding from "./branding";
import CustomDomain from "./custom-domain";
import TagTranslations from "./tag-translations";

/**
 * Settings > Preference Center, as the specification names it: the custom
 * domain of the subscribers' page (its own section, "Custom Domain"), the
 * page's branding, who may embed it, and the public tags' translations.
 */
export default function PreferenceCenter() {
  return (
    <Page title={t("preferenceCenter.title")} description={t("preferenceCenter.intro")}>
      <nav aria-label={t("preferenceCenter.breadcrumb")} class="breadcrumb">
        <ol>
          <li>{t("nav.section.settings")}</li>
          <li>
            <a href={href("/settings/preference-center")} aria-current="page">
              {t("preferenceCenter.title")}
            </a>
          </li>
        </ol>
      </nav>
      <CustomDomain />
      <Branding />
      <TagTranslations />
    </Page>
  );
}
