// What the kill -9 tests share (campaigns, imports): a platform process started with one set of settings, called as
// its operator or with an API key, and a campaign to every one of a number of
// new subscribers, sent.
import type { PlatformProcess } from "@emailsvc/testing";
import { GENEROUS_RATE_LIMIT_ENV } from "../../../services/gateway/test/support/harness";

/**
 * The settings of a platform process that a kill -9 test starts (again) on
 * `dataDir`: on `npm start`'s defaults, or on the test servers' MongoDB and
 * Kafka (`servers`, under a namespace of its own), sweeping outboxes often,
 * with the test's admin token and generous rate limits; `extra` on top.
 */
export function crashTestEnv(
  options: { dataDir: string; adminToken: string; servers: { mongoUrl: string; kafkaBrokers: string; namespace: string } | undefined },
  extra: Record<string, string>,
): Record<string, string> {
  const { servers } = options;
  return {
    DATA_DIR: options.dataDir,
    ADMIN_TOKEN: options.adminToken,
    // On the servers every kill -9 test's platform uses the same databases, so they are replicas of one deployment
    // to each other, and replicas share their keys: one subscribers service may finish another's import, whose
    // erasure markers it must then read (they are keyed hashes).
    ...(servers
      ? { MONGO_URL: servers.mongoUrl, KAFKA_BROKERS: servers.kafkaBrokers, KAFKA_NAMESPACE: servers.namespace, SUPPRESSION_KEYS: "k1:Y3Jhc2gtdGVzdHMtc3VwcHJlc3Npb24ta2V5LTAxMjM0NQ==" }
      : {}),
    TOKEN_SIGNING_KEYS: "k1:crash-test-signing-key-0123456789abcdef-0123",
    OUTBOX_SWEEP_INTERVAL_MS: "500",
    ...GENEROUS_RATE_LIMIT_ENV,
    ...extra,
  };
}

/** A JSON call to the platform process: with the API key, or as the operator (`admin`). */
export type ProcessCall = (method: string, path: string, body?: unknown, admin?: boolean) => Promise<{ status: number; body: any }>;

/** Calls whichever process `proc()` is now (it is started again after each kill), with the key `key()` is now. */
export function processCaller(proc: () => Pick<PlatformProcess, "url"> | undefined, adminToken: string, key: () => string): ProcessCall {
  return async (method, path, body, admin = false) => {
    const headers: Record<string, string> = admin ? { authorization: `Bearer ${adminToken}` } : { "x-api-key": key() };
    if (body !== undefined) headers["content-type"] = "application/json";
    const res = await fetch(`${proc()!.url}${path}`, { method, headers, ...(body !== undefined ? { body: JSON.stringify(body) } : {}) });
    const text = await res.text();
    return { status: res.status, body: text ? JSON.parse(text) : undefined };
  };
}

const MJML = "<mjml><mj-body><mj-section><mj-column><mj-text>Hello {{metadata.name}}</mj-text></mj-column></mj-section></mj-body></mjml>";

/**
 * A new account with a key of `mode` (handed to `useKey` before anything else
 * is called with it), `recipients` subscribers r0@… tagged `everyone`, and a
 * marketing campaign to them, sent: its id and the send's answer.
 */
export async function sendCampaignToEveryone(
  call: ProcessCall,
  useKey: (key: string) => void,
  options: { account: string; mode: "live" | "test"; recipients: number },
): Promise<{ id: string; sent: { status: number; body: any } }> {
  const account = await call("POST", "/admin/v1/accounts", { name: options.account }, true);
  useKey((await call("POST", `/admin/v1/accounts/${account.body.id}/api-keys`, { mode: options.mode }, true)).body.key);
  expect((await call("POST", "/api/v1/tags", { name: "everyone" })).status).toBe(201);
  const template = await call("POST", "/api/v1/templates", { name: `${options.account} news`, subject: "For {{metadata.name}}", category: "marketing", mjml_content: MJML });
  expect(template.status).toBe(201);
  for (let i = 0; i < options.recipients; i += 20) {
    const batch = Math.min(20, options.recipients - i);
    const made = await Promise.all(
      Array.from({ length: batch }, (_, j) => call("POST", "/api/v1/subscribers", { email: `r${i + j}@example.com`, tags: ["everyone"], metadata: { name: `R${i + j}` } })),
    );
    expect(made.map((m) => m.status)).toEqual(Array(batch).fill(201));
  }
  const campaign = await call("POST", "/api/v1/campaigns", { name: options.account, template_id: template.body.id, tag_filter: { include_tags: ["everyone"] } });
  const id = campaign.body.id as string;
  const sent = await call("POST", `/api/v1/campaigns/${id}/send`);
  expect(sent.body.total_recipients).toBe(options.recipients);
  return { id, sent };
}

/** The campaign once it is `sent` (polled every 100 ms, up to two minutes): its last answer, whatever its status. */
export async function untilCampaignSent(call: ProcessCall, id: string): Promise<any> {
  let campaign = (await call("GET", `/api/v1/campaigns/${id}`)).body;
  for (let i = 0; i < 1200 && campaign.status !== "sent"; i++) {
    await new Promise((resolve) => setTimeout(resolve, 100));
    campaign = (await call("GET", `/api/v1/campaigns/${id}`)).body;
  }
  return campaign;
}
