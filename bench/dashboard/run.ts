// Dashboard benchmark: Lighthouse (npm `lighthouse` 12, on the system
// Chromium) against the dashboard of `npm start`'s platform, signed in as a
// member, on the main pages, and the time a member waits for the first
// pages to be usable, measured in Chromium (playwright-core):
//   - sign-in: from the navigation's start to the sign-in form usable (the
//     email field on screen and enabled), with an empty cache;
//   - overview: from the click on "Sign in" to the overview's heading shown.
//
//   npm run bench:dashboard -w @emailsvc/bench     (writes bench/results/dashboard.json)
//
// DASHBOARD_BENCH_PAGES (comma-separated paths, e.g. "/,/subscribers") picks
// the pages; DASHBOARD_BENCH_RUNS (default 5) the timed sign-ins;
// DASHBOARD_BENCH_FORM_FACTORS ("mobile,desktop", the default) Lighthouse's
// presets: mobile is its default (a mid-range phone on slow 4G, simulated),
// desktop its desktop preset. A page a build does not have yet is reported as
// such (the app answers "Page not found"), not skipped silently.
import { execFile } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { promisify } from "node:util";
import { chromiumPath, launchChromium } from "@emailsvc/testing";
import { describeMachine } from "../support/machine.js";
import { dashboardMember } from "../support/dashboard.js";
import { oneProcess, REPO } from "../support/platform.js";
import { writeResultsBlock } from "../support/readme.js";
import { percentile } from "../support/stats.js";

const run = promisify(execFile);

const PAGES = (process.env.DASHBOARD_BENCH_PAGES ?? "/sign-in,/,/subscribers,/templates,/campaigns,/sending-domains,/webhooks").split(",").filter(Boolean);
const RUNS = Number(process.env.DASHBOARD_BENCH_RUNS ?? 5);
const FORM_FACTORS = (process.env.DASHBOARD_BENCH_FORM_FACTORS ?? "mobile,desktop").split(",").filter((f): f is "mobile" | "desktop" => f === "mobile" || f === "desktop");
const CATEGORIES = ["performance", "accessibility", "best-practices"] as const;

export interface LighthouseRow {
  page: string;
  form_factor: "mobile" | "desktop";
  /** Whether the build has the page (false: the app showed "Page not found"). */
  exists: boolean;
  performance: number;
  accessibility: number;
  best_practices: number;
  /** Lighthouse's metrics, milliseconds (simulated throttling for mobile). */
  fcp_ms: number;
  lcp_ms: number;
  tbt_ms: number;
  cls: number;
  /** Bytes the page transferred (compressed). */
  transfer_bytes: number;
  /** The audits that did not pass (score below 0.9), by id: what to fix. */
  failing: string[];
}

export interface TimingRow {
  what: "sign-in form usable (cold)" | "overview shown after sign-in" | "of which the sign-in call (POST /api/v1/session)";
  runs: number;
  median_ms: number;
  max_ms: number;
}

/**
 * One Lighthouse run of one page; again (up to 3 times) when Lighthouse
 * itself fails to record (e.g. NO_NAVSTART on a busy machine: "Please run
 * Lighthouse again"), never for a score.
 */
async function lighthouse(url: string, cookie: string | undefined, formFactor: "mobile" | "desktop"): Promise<Omit<LighthouseRow, "page" | "form_factor" | "exists">> {
  for (let attempt = 1; ; attempt++) {
    try {
      return await lighthouseOnce(url, cookie, formFactor);
    } catch (err) {
      if (attempt >= 3) throw err;
      console.log(`lighthouse failed to record (${String((err as { stderr?: string }).stderr ?? err).trim().slice(0, 200)}): again`);
    }
  }
}

/** One Lighthouse run of one page (its CLI, in a Chromium of its own). */
async function lighthouseOnce(url: string, cookie: string | undefined, formFactor: "mobile" | "desktop"): Promise<Omit<LighthouseRow, "page" | "form_factor" | "exists">> {
  const dir = mkdtempSync(join(tmpdir(), "lighthouse-"));
  try {
    const out = join(dir, "report.json");
    const args = [
      join(REPO, "node_modules", "lighthouse", "cli", "index.js"),
      url,
      "--output=json",
      `--output-path=${out}`,
      `--only-categories=${CATEGORIES.join(",")}`,
      "--chrome-flags=--headless --no-sandbox --disable-gpu --disable-background-networking",
      "--quiet",
      ...(formFactor === "desktop" ? ["--preset=desktop"] : []),
      ...(cookie ? [`--extra-headers=${JSON.stringify({ Cookie: cookie })}`] : []),
    ];
    await run(process.execPath, args, { env: { ...process.env, CHROME_PATH: chromiumPath() }, maxBuffer: 64 << 20, timeout: 180_000 });
    const report = JSON.parse(readFileSync(out, "utf8")) as {
      runtimeError?: { code: string; message: string };
      categories: Record<string, { score: number | null; auditRefs: Array<{ id: string; weight: number }> }>;
      audits: Record<string, { score: number | null; scoreDisplayMode: string; numericValue?: number }>;
    };
    if (report.runtimeError) throw new Error(`Lighthouse: ${report.runtimeError.code} ${report.runtimeError.message}`);
    const score = (c: string) => Math.round((report.categories[c]?.score ?? 0) * 100);
    const metric = (id: string) => Math.round((report.audits[id]?.numericValue ?? Number.NaN) * (id === "cumulative-layout-shift" ? 1000 : 1)) / (id === "cumulative-layout-shift" ? 1000 : 1);
    const failing = new Set<string>();
    for (const category of CATEGORIES) {
      for (const ref of report.categories[category]?.auditRefs ?? []) {
        const audit = report.audits[ref.id];
        if (audit && audit.score !== null && audit.score < 0.9 && (audit.scoreDisplayMode === "binary" || audit.scoreDisplayMode === "numeric" || audit.scoreDisplayMode === "metricSavings")) failing.add(ref.id);
      }
    }
    return {
      performance: score("performance"),
      accessibility: score("accessibility"),
      best_practices: score("best-practices"),
      fcp_ms: metric("first-contentful-paint"),
      lcp_ms: metric("largest-contentful-paint"),
      tbt_ms: metric("total-blocking-time"),
      cls: metric("cumulative-layout-shift"),
      transfer_bytes: Math.round(report.audits["total-byte-weight"]?.numericValue ?? 0),
      failing: [...failing].sort(),
    };
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

/** Whether the build has the page: the app's own "Page not found" says it has not. */
async function pageExists(base: string, path: string, cookie: string): Promise<boolean> {
  const browser = await launchChromium();
  try {
    const context = await browser.newContext();
    const [name, value] = cookie.split("=", 2) as [string, string];
    await context.addCookies([{ name, value, url: base }]);
    const page = await context.newPage();
    await page.goto(`${base}/dashboard${path === "/" ? "/" : path}`);
    await page.locator("h1").first().waitFor({ timeout: 15_000 });
    return (await page.locator("h1").first().textContent()) !== "Page not found";
  } finally {
    await browser.close();
  }
}

/** The sign-in timings: each run a fresh context (empty cache, no cookie), as a member's first visit. */
async function timings(base: string, creds: { email: string; password: string }): Promise<TimingRow[]> {
  const form: number[] = [];
  const overview: number[] = [];
  const session: number[] = [];
  const browser = await launchChromium();
  try {
    for (let i = 0; i < RUNS; i++) {
      const context = await browser.newContext({ viewport: { width: 1280, height: 800 } });
      const page = await context.newPage();
      await page.goto(`${base}/dashboard/sign-in`, { waitUntil: "commit" });
      const email = page.getByLabel("Email address");
      await email.waitFor({ state: "visible" });
      // Milliseconds since the navigation started (the page's time origin), read once the field is there and enabled.
      form.push(await email.evaluate((el) => ((el as unknown as { disabled: boolean }).disabled ? Number.NaN : performance.now())));
      await email.fill(creds.email);
      await page.getByLabel("Password").fill(creds.password);
      const clicked = await page.evaluate(() => performance.now());
      const signInCall = page.waitForResponse((res) => res.request().method() === "POST" && new URL(res.url()).pathname === "/api/v1/session");
      await page.getByRole("button", { name: "Sign in", exact: true }).click();
      await page.getByRole("heading", { level: 1, name: "Overview" }).waitFor();
      overview.push((await page.evaluate(() => performance.now())) - clicked);
      // The part of it the platform spends on the password (scrypt, by design slow).
      const call = await signInCall;
      await call.finished();
      session.push(call.request().timing().responseEnd);
      await context.close();
    }
  } finally {
    await browser.close();
  }
  const row = (what: TimingRow["what"], values: number[]): TimingRow => ({ what, runs: values.length, median_ms: Math.round(percentile([...values].sort((a, b) => a - b), 50)), max_ms: Math.round(Math.max(...values)) });
  return [row("sign-in form usable (cold)", form), row("overview shown after sign-in", overview), row("of which the sign-in call (POST /api/v1/session)", session)];
}

async function main(): Promise<void> {
  const machine = describeMachine();
  const dataDir = mkdtempSync(join(tmpdir(), "dashboard-bench-"));
  const platform = await oneProcess(dataDir, { RATE_LIMIT: "off" });
  try {
    const creds = await dashboardMember(platform.url);
    const lighthouseRows: LighthouseRow[] = [];
    for (const path of PAGES) {
      const signedOut = path === "/sign-in";
      const exists = signedOut || (await pageExists(platform.url, path, creds.cookie));
      for (const formFactor of FORM_FACTORS) {
        const url = `${platform.url}/dashboard${path === "/" ? "/" : path}`;
        console.log(`lighthouse ${formFactor} ${path}${exists ? "" : " (not in this build)"}`);
        lighthouseRows.push({ page: path, form_factor: formFactor, exists, ...(await lighthouse(url, signedOut ? undefined : creds.cookie, formFactor)) });
      }
    }
    const timingRows = await timings(platform.url, creds);
    const lighthouseVersion = (JSON.parse(readFileSync(join(REPO, "node_modules", "lighthouse", "package.json"), "utf8")) as { version: string }).version;
    const chromium = (await run(chromiumPath(), ["--version"]).catch(() => ({ stdout: "unknown" }))).stdout.trim();
    const results = { machine, lighthouse: lighthouseVersion, chromium, lighthouse_rows: lighthouseRows, timings: timingRows };
    writeFileSync(join(REPO, "bench", "results", "dashboard.json"), JSON.stringify(results, null, 2) + "\n");
    writeResultsBlock(join(REPO, "bench", "README.md"), "dashboard", "Dashboard: Lighthouse and the first pages' wait", table(results));
    console.log(table(results));
  } finally {
    await platform.stop();
    rmSync(dataDir, { recursive: true, force: true });
  }
}

function table(r: { machine: ReturnType<typeof describeMachine>; lighthouse: string; chromium: string; lighthouse_rows: LighthouseRow[]; timings: TimingRow[] }): string {
  const lines = [
    `Recorded ${r.machine.date.slice(0, 16).replace("T", " ")} UTC on ${r.machine.cpus} × ${r.machine.cpu}, Node ${r.machine.node}, load ${r.machine.loadavg_start.split(" ").slice(0, 3).join(" ")} at the start; Lighthouse ${r.lighthouse}, ${r.chromium}.`,
    "",
    "| page | form factor | performance | accessibility | best practices | FCP | LCP | TBT | CLS | transferred | audits below 0.9 |",
    "|---|---|---|---|---|---|---|---|---|---|---|",
    ...r.lighthouse_rows.map(
      (row) =>
        `| \`${row.page}\`${row.exists ? "" : " (not in this build)"} | ${row.form_factor} | ${row.performance} | ${row.accessibility} | ${row.best_practices} | ${row.fcp_ms} ms | ${row.lcp_ms} ms | ${row.tbt_ms} ms | ${row.cls} | ${(row.transfer_bytes / 1024).toFixed(0)} KiB | ${row.failing.length ? row.failing.map((f) => `\`${f}\``).join(", ") : "none"} |`,
    ),
    "",
    "| wait (Chromium, 1280 × 800, no throttling) | runs | median | max |",
    "|---|---|---|---|",
    ...r.timings.map((row) => `| ${row.what} | ${row.runs} | ${row.median_ms} ms | ${row.max_ms} ms |`),
  ];
  return lines.join("\n");
}

main().catch((err: unknown) => {
  console.error(err);
  process.exit(1);
});
