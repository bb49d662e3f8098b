// Takes the README's screenshot of the preference page: the platform as
// `npm start` runs it (built), a few public tags, one subscriber, and the page
// at a phone's width in headless Chromium (scripts/chromium/install.sh).
//
//   npm run build && node scripts/screenshots/portal.js     (writes docs/portal.png)
const { mkdtempSync, rmSync } = require("node:fs");
const { tmpdir } = require("node:os");
const { join } = require("node:path");
const { freePort, launchChromium, startPlatformProcess } = require("@emailsvc/testing");

const repo = join(__dirname, "..", "..");
const ADMIN = "screenshot-admin-token-0123456789abcdef";

async function main() {
  const dataDir = mkdtempSync(join(tmpdir(), "portal-screenshot-"));
  const platform = await startPlatformProcess(repo, { DATA_DIR: dataDir, ADMIN_TOKEN: ADMIN, PORTAL_PORT: String(await freePort()) });
  try {
    const call = async (method, path, body, key) => {
      const headers = key ? { "x-api-key": key } : { authorization: `Bearer ${ADMIN}` };
      if (body) headers["content-type"] = "application/json";
      const res = await fetch(platform.url + path, { method, headers, body: body && JSON.stringify(body) });
      return res.json();
    };
    const account = await call("POST", "/admin/v1/accounts", { name: "Screenshot" });
    const { key } = await call("POST", `/admin/v1/accounts/${account.id}/api-keys`, { mode: "test" });
    await call("POST", "/api/v1/tags", { name: "Weekly digest", description: "The week's best, every Friday.", is_public: true }, key);
    await call("POST", "/api/v1/tags", { name: "Product updates", description: "New features, a few times a year.", is_public: true }, key);
    await call("POST", "/api/v1/tags", { name: "Events", description: "Meetups and webinars near you.", is_public: true }, key);
    const subscriber = await call("POST", "/api/v1/subscribers", { email: "ada@example.com", tags: ["Weekly digest"] }, key);
    const { url } = await call("POST", `/api/v1/subscribers/${subscriber.id}/preference-token`, undefined, key);
    const browser = await launchChromium();
    try {
      const page = await (await browser.newContext({ viewport: { width: 390, height: 844 }, isMobile: true, deviceScaleFactor: 2 })).newPage();
      await page.goto(url.replace(/^http:\/\/localhost:\d+/, platform.portalUrl));
      await page.getByRole("button", { name: "Subscribe to Product updates" }).click();
      await page.screenshot({ path: join(repo, "docs", "portal.png"), fullPage: true });
    } finally {
      await browser.close();
    }
  } finally {
    await platform.stop();
    rmSync(dataDir, { recursive: true, force: true });
  }
}

main().catch((err) => {
  console.error(err);
  process.exit(1);
});
