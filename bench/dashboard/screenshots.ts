// The README's screenshots of the dashboard: `npm start`'s platform, a member
// signed in through the sign-in form, some data, and the main pages at a
// desktop's (1280 × 800) and a phone's (360 × 740) width in headless Chromium.
//
//   npm run screenshots:dashboard -w @emailsvc/bench     (writes docs/images/dashboard-*.png)
//
// Each PNG must stay under 256 KB (the run fails otherwise; a table of text at 1280 px
// is ~170 KB): the viewport is captured, not the whole page. A page the build does not have yet (the app
// answers "Page not found") is left out, and said so.
import { mkdirSync, mkdtempSync, rmSync, statSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { launchChromium } from "@emailsvc/testing";
import type { Page } from "playwright-core";
import { dashboardMember, type DashboardMember } from "../support/dashboard.js";
import { oneProcess, REPO } from "../support/platform.js";

const MAX_BYTES = 256 * 1024;

/** The pages shown, by file name: the path, and what to wait for before the picture (the page's data, not its spinner). */
function shots(member: DashboardMember): Array<{ name: string; path: string; ready: (page: Page) => Promise<unknown> }> {
  const table = (p: Page) => p.getByRole("table").first().waitFor();
  return [
    { name: "overview", path: "/", ready: (p) => p.getByRole("heading", { level: 1 }).waitFor() },
    { name: "subscribers", path: "/subscribers", ready: table },
    { name: "templates", path: "/templates", ready: table },
    { name: "campaigns", path: "/campaigns", ready: (p) => p.getByRole("heading", { level: 1 }).waitFor() },
    { name: "sending-domain", path: `/sending-domains/${member.domainId}`, ready: (p) => p.getByRole("region", { name: "DNS records", exact: true }).waitFor() },
    { name: "webhooks", path: "/webhooks", ready: (p) => p.getByRole("heading", { level: 1, name: "Webhooks" }).waitFor() },
  ];
}

async function main(): Promise<void> {
  const dataDir = mkdtempSync(join(tmpdir(), "dashboard-screenshots-"));
  const platform = await oneProcess(dataDir, { RATE_LIMIT: "off" });
  const out = join(REPO, "docs", "images");
  mkdirSync(out, { recursive: true });
  const missing: string[] = [];
  try {
    const member = await dashboardMember(platform.url);
    const browser = await launchChromium();
    try {
      for (const device of [
        { suffix: "", options: { viewport: { width: 1280, height: 800 } } },
        { suffix: "-phone", options: { viewport: { width: 360, height: 740 }, isMobile: true, hasTouch: true } },
      ]) {
        const context = await browser.newContext(device.options);
        const page = await context.newPage();
        // Signed in through the form, as a member does.
        await page.goto(`${platform.url}/dashboard/sign-in`);
        await page.getByLabel("Email address").fill(member.email);
        await page.getByLabel("Password").fill(member.password);
        await page.getByRole("button", { name: "Sign in", exact: true }).click();
        await page.getByRole("heading", { level: 1, name: "Overview" }).waitFor();
        for (const shot of shots(member)) {
          await page.goto(`${platform.url}/dashboard${shot.path}`);
          const heading = page.getByRole("heading", { level: 1 });
          await heading.waitFor();
          if ((await heading.textContent()) === "Page not found") {
            if (device.suffix === "") missing.push(shot.name);
            continue;
          }
          await shot.ready(page);
          // The notices and the focus ring of the heading are not part of the picture.
          await page.locator("h1").first().evaluate((h1) => (h1 as unknown as { blur(): void }).blur());
          const file = join(out, `dashboard-${shot.name}${device.suffix}.png`);
          await page.screenshot({ path: file, animations: "disabled" });
          const bytes = statSync(file).size;
          console.log(`${file}: ${(bytes / 1024).toFixed(0)} KB`);
          if (bytes > MAX_BYTES) throw new Error(`${file} is ${bytes} bytes, over ${MAX_BYTES}`);
        }
        await context.close();
      }
    } finally {
      await browser.close();
    }
  } finally {
    await platform.stop();
    rmSync(dataDir, { recursive: true, force: true });
  }
  if (missing.length > 0) console.log(`not in this build (no screenshot): ${missing.join(", ")}`);
}

main().catch((err: unknown) => {
  console.error(err);
  process.exit(1);
});
