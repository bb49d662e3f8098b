// listmonk's side of the campaign run through SMTP (run.ts): one campaign to
// the same subscribers as ours, through the same SMTP server, with the same
// message: the HTML, text and subject our template renders (taken from our
// preview with listmonk's variable in place of ours), in a listmonk template
// that adds nothing around it.
// Note: listmonk looks for running campaigns every 5 s (hard-coded in v1.1.0
// and v6.2.0 alike), so up to 5 s of its time is that wait; the timing starts
// at the start request as ours does, and at 100,000 the wait hardly matters.
import { startListmonk, type ListmonkBuild } from "../support/listmonk.js";
import { cpuSeconds, peakRssMb } from "../support/process.js";

export interface ListmonkResult {
  /** From the start request until the last message reached the sink. */
  seconds: number;
  /** From the first message at the sink until the last: without its scan's wait (what its rate is computed from). */
  sendingSeconds: number;
  sent: number;
  peakRssMb: number;
  /** CPU seconds of listmonk's process from the start request to the end. */
  cpuSeconds: number;
  /** CPU seconds of its PostgreSQL (postmaster and backends) over the same time. */
  postgresCpuSeconds: number;
  version: string;
  settings: Record<string, unknown>;
}

/**
 * One listmonk campaign to `subscribers` addresses (`addresses(i)`), through
 * the SMTP server at 127.0.0.1:`smtpPort`, timed from the start request until
 * `delivered()` reaches the count and listmonk calls the campaign finished.
 */
export async function runListmonkCampaign(options: {
  /** Default: v1.1.0 from the Go module proxy. */
  build?: ListmonkBuild;
  subscribers: number;
  addresses: (i: number) => string;
  smtpPort: number;
  /** The message as ours renders it, with `{{metadata.name}}` standing where each recipient's name goes. */
  subject: string;
  html: string;
  text: string;
  delivered: () => number;
  log?: (line: string) => void;
}): Promise<ListmonkResult> {
  const log = options.log ?? console.log;
  // Concurrency and rate opened up, as a user chasing throughput would; one
  // pooled SMTP server without TLS or auth (the sink). Its workers and
  // connections: CAMPAIGN_BENCH_LISTMONK_CONCURRENCY (default 20; a sweep of
  // 10, 20 and 50 on this machine is in bench/README.md).
  const concurrency = Number(process.env.CAMPAIGN_BENCH_LISTMONK_CONCURRENCY ?? 20);
  const settings = {
    "app.concurrency": concurrency,
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
        max_conns: concurrency,
        idle_timeout: "15s",
        wait_timeout: "5s",
        max_msg_retries: 2,
        msg_retry_delay: "10ms",
        // v1.1.0 reads tls_enabled, v6 tls_type.
        tls_enabled: false,
        tls_type: "none",
        tls_skip_verify: true,
        email_headers: [],
        from_addresses: [],
      },
    ],
  };
  const listmonk = await startListmonk({
    ...(options.build ? { build: options.build } : {}),
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
    // A template that is the campaign's body and nothing else (its default one wraps a layout of its own around it).
    const template = await call("POST", "/api/templates", { name: "Bare", type: "campaign", body: '{{ template "content" . }}' });
    const created = await call("POST", "/api/campaigns", {
      name: "Bench",
      subject: toListmonk(options.subject),
      lists: [1],
      from_email: "Bench <bench@bench.example>",
      content_type: "html",
      messenger: "email",
      type: "regular",
      body: toListmonk(options.html),
      altbody: toListmonk(options.text),
      template_id: template.data.id as number,
    });
    const id = created.data.id as number;
    const cpu0 = cpuSeconds(listmonk.pid);
    const pgCpu0 = listmonk.postgresCpuSeconds();
    const t0 = performance.now();
    // When its first message reaches the sink: listmonk finds a started
    // campaign only at its next scan (every 5 s), a wait the rate leaves out.
    let firstAt = 0;
    const watch = setInterval(() => {
      if (!firstAt && options.delivered() > 0) firstAt = performance.now();
    }, 10);
    await call("PUT", `/api/campaigns/${id}/status`, { status: "running" });
    let status = "running";
    let lastLog = 0;
    while (status === "running") {
      await new Promise((resolve) => setTimeout(resolve, 200));
      status = (await call("GET", `/api/campaigns/${id}`)).data.status as string;
      if (performance.now() - lastLog > 5000) {
        lastLog = performance.now();
        log(`  listmonk ${listmonk.version}: ${((performance.now() - t0) / 1000).toFixed(1)} s, ${options.delivered()} at the sink, ${status}`);
      }
    }
    if (status !== "finished") throw new Error(`listmonk campaign ended ${status}:\n${listmonk.output.slice(-20).join("")}`);
    // Finished: the last messages may still be on their connections.
    for (let i = 0; i < 100 && options.delivered() < options.subscribers; i++) await new Promise((resolve) => setTimeout(resolve, 100));
    clearInterval(watch);
    const end = performance.now();
    return {
      seconds: (end - t0) / 1000,
      sendingSeconds: (end - (firstAt || t0)) / 1000,
      sent: options.delivered(),
      peakRssMb: peakRssMb(listmonk.pid),
      cpuSeconds: cpuSeconds(listmonk.pid) - cpu0,
      postgresCpuSeconds: listmonk.postgresCpuSeconds() - pgCpu0,
      version: listmonk.version,
      settings,
    };
  } finally {
    await listmonk.stop();
  }
}
