// listmonk's side of the campaign run through SMTP (run.ts): one campaign to
// the same subscribers as ours, through the same SMTP server.
// Note: v1.1.0 looks for running campaigns every 5 s (hard-coded), so up to
// 5 s of its time is that wait; at 100,000 it hardly matters.
import { LISTMONK_VERSION, startListmonk } from "../support/listmonk.js";
import { peakRssMb } from "../support/process.js";

export interface ListmonkResult {
  seconds: number;
  sent: number;
  peakRssMb: number;
  version: string;
  settings: Record<string, unknown>;
}

/**
 * One listmonk campaign to `subscribers` addresses (`addresses(i)`), through
 * the SMTP server at 127.0.0.1:`smtpPort`, timed from the start request until
 * `delivered()` reaches the count and listmonk calls the campaign finished.
 */
export async function runListmonkCampaign(options: {
  subscribers: number;
  addresses: (i: number) => string;
  smtpPort: number;
  subject: string;
  html: string;
  delivered: () => number;
  log?: (line: string) => void;
}): Promise<ListmonkResult> {
  const log = options.log ?? console.log;
  // Concurrency and rate opened up, as a user chasing throughput would; one
  // pooled SMTP server without TLS or auth (the sink).
  const settings = {
    "app.concurrency": 20,
    "app.message_rate": 100_000,
    "app.batch_size": 5000,
    "app.max_send_errors": 100_000,
    "privacy.individual_tracking": false,
    smtp: [
      {
        enabled: true,
        host: "127.0.0.1",
        port: options.smtpPort,
        auth_protocol: "none",
        username: "",
        password: "",
        hello_hostname: "",
        max_conns: 20,
        idle_timeout: "15s",
        wait_timeout: "5s",
        max_msg_retries: 2,
        tls_enabled: false,
        tls_skip_verify: true,
        email_headers: [],
      },
    ],
  };
  const listmonk = await startListmonk({
    settings,
    log,
    // The subscribers, straight into its tables (setup, not timed), on the
    // default list (id 1), in place of the two examples --install creates.
    setup: async (psql) => {
      await psql(
        `DELETE FROM subscribers;
         INSERT INTO subscribers (uuid, email, name, attribs, status)
         SELECT gen_random_uuid(), 'r' || i || '@bench.example', 'Reader ' || i, jsonb_build_object('name', 'Reader ' || i), 'enabled'
         FROM generate_series(0, ${options.subscribers - 1}) AS i;
         INSERT INTO subscriber_lists (subscriber_id, list_id, status) SELECT id, 1, 'confirmed' FROM subscribers;`,
      );
    },
  });
  void options.addresses;
  try {
    const { call } = listmonk;
    // Its template language: {{ .Subscriber.Attribs.name }} where ours has {{metadata.name}}.
    const toListmonk = (text: string) => text.replace(/\{\{\s*metadata\.(\w+)\s*\}\}/g, "{{ .Subscriber.Attribs.$1 }}");
    const created = await call("POST", "/api/campaigns", {
      name: "Bench",
      subject: toListmonk(options.subject),
      lists: [1],
      from_email: "Bench <bench@bench.example>",
      content_type: "html",
      messenger: "email",
      type: "regular",
      body: toListmonk(options.html),
      template_id: 1,
    });
    const id = created.data.id as number;
    const t0 = performance.now();
    await call("PUT", `/api/campaigns/${id}/status`, { status: "running" });
    let status = "running";
    let lastLog = 0;
    while (status === "running") {
      await new Promise((resolve) => setTimeout(resolve, 200));
      status = (await call("GET", `/api/campaigns/${id}`)).data.status as string;
      if (performance.now() - lastLog > 5000) {
        lastLog = performance.now();
        log(`  listmonk ${LISTMONK_VERSION}: ${((performance.now() - t0) / 1000).toFixed(1)} s, ${options.delivered()} at the sink, ${status}`);
      }
    }
    if (status !== "finished") throw new Error(`listmonk campaign ended ${status}:\n${listmonk.output.slice(-20).join("")}`);
    // Finished: the last messages may still be on their connections.
    for (let i = 0; i < 100 && options.delivered() < options.subscribers; i++) await new Promise((resolve) => setTimeout(resolve, 100));
    const seconds = (performance.now() - t0) / 1000;
    return { seconds, sent: options.delivered(), peakRssMb: peakRssMb(listmonk.pid), version: LISTMONK_VERSION, settings };
  } finally {
    await listmonk.stop();
  }
}
