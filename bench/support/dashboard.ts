// A dashboard member for the benchmark and the screenshots: a new account
// through the operator's API, its owner's invitation accepted through the
// public call (as a new customer's first sign-in does), and some data in its
// live mode, so that the pages show lists as an account in use has them.
import { api } from "./platform.js";

export interface DashboardMember {
  accountId: string;
  /** The session cookie (`name=value`), as the accept call set it. */
  cookie: string;
  email: string;
  password: string;
  /** A live key of the account, for seeding more. */
  liveKey: string;
  /** The live sending domain it has (pending: its records not published). */
  domainId: string;
}

const MJML = `<mjml><mj-body><mj-section><mj-column><mj-text>Hello {{first_name}}, here is what is new this week.</mj-text></mj-column></mj-section></mj-body></mjml>`;

export async function dashboardMember(base: string, name = "Acme Newsletters"): Promise<DashboardMember> {
  const account = await api(base, "", "POST", "/admin/v1/accounts", { name }, true);
  if (account.status !== 201) throw new Error(`POST /admin/v1/accounts: ${account.status} ${JSON.stringify(account.body)}`);
  const accountId = account.body.id as string;
  const email = "owner@acme.example";
  const invited = await api(base, "", "POST", `/admin/v1/accounts/${accountId}/invitations`, { email, role: "owner" }, true);
  if (invited.status !== 201) {
    throw new Error(`POST /admin/v1/accounts/{id}/invitations answered ${invited.status}: the dashboard's members (issue 19) are not in this build`);
  }
  const token = new URL(invited.body.url as string).hash.replace(/^#token=/, "");
  const password = "dashboard-bench-password";
  const accepted = await fetch(`${base}/api/v1/invitations/accept`, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify({ token, name: "Ada Owner", password }),
  });
  if (accepted.status !== 201) throw new Error(`POST /api/v1/invitations/accept: ${accepted.status} ${await accepted.text()}`);
  const cookie = /^([^;]+)/.exec(accepted.headers.get("set-cookie") ?? "")?.[1];
  if (!cookie) throw new Error("the accept call set no session cookie");

  const liveKey = (await api(base, "", "POST", `/admin/v1/accounts/${accountId}/api-keys`, { mode: "live" }, true)).body.key as string;
  const seed = async (path: string, body: unknown) => {
    const res = await api(base, liveKey, "POST", path, body);
    if (res.status >= 300) throw new Error(`seeding POST ${path}: ${res.status} ${JSON.stringify(res.body)}`);
    return res.body;
  };
  await seed("/api/v1/tags", { name: "Weekly digest", is_public: true, description: "The week's best, every Friday." });
  await seed("/api/v1/tags", { name: "Product updates", is_public: true });
  const names = ["Ada", "Grace", "Alan", "Edsger", "Barbara", "Donald", "Frances", "Ken", "Radia", "Tim"];
  for (let i = 0; i < 30; i++) {
    const first = names[i % names.length]!;
    await seed("/api/v1/subscribers", { email: `${first.toLowerCase()}${i}@example.com`, metadata: { first_name: first }, tags: i % 3 === 0 ? ["Weekly digest"] : ["Product updates"] });
  }
  await seed("/api/v1/templates", { name: "Weekly digest", slug: "weekly-digest", subject: "This week at Acme, {{first_name}}", mjml_content: MJML, category: "marketing" });
  const domain = (await seed("/api/v1/domains", { name: "mail.acme-newsletters.example.com" })) as { id: string };
  await seed("/api/v1/suppressions", { email: "left-the-company@example.com", reason: "manual" });
  // Made after the subscribers: no event is due to them (their hosts are not on the network).
  await seed("/api/v1/webhooks", { url: "https://crm.acme-newsletters.example.com/hooks/emailsvc", events: ["email.sent", "email.bounced", "subscriber.unsubscribed"], description: "CRM sync" });
  await seed("/api/v1/webhooks", { url: "https://analytics.acme-newsletters.example.com/in", events: ["*"], description: "Analytics" });
  return { accountId, cookie, email, password, liveKey, domainId: domain.id };
}
