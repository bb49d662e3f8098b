import { t } from "../i18n";
import { Page } from "../kit";
import { useSession } from "../session";

// The overview's figures (sends, bounce and complaint rates, running campaigns) come with GET /api/v1/overview.
export default function Overview() {
  const session = useSession()!;
  return (
    <Page title={t("overview.title")}>
      <p>{t("overview.welcome", { name: session.member.name || session.member.email })}</p>
    </Page>
  );
}
