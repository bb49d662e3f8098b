import { spawnSync } from "node:child_process";
import { mkdtempSync, readdirSync, readFileSync, rmSync, symlinkSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { npmStartNodeArgs } from "@emailsvc/testing";
import { checkCustomDomain } from "../../services/portal/src/domain/custom-domain";

// README.md, tried literally: every command of its `sh` blocks runs, in the
// order a reader pastes them, against a fresh `npm start` (embedded/dist/main.js
// with npm start's Node flags, a new DATA_DIR, nothing else set), on the
// gateway and portal ports the README names (8080, 8081). Each command must
// exit 0 and each `curl` must get a 2xx: the blocks run in one bash with
// `set -e -o pipefail` and `curl` given `--fail-with-body`, so the first
// failure stops the run and is reported with its README line. The reader's
// only inputs are what the first start prints: a line that assigns a
// placeholder (`KEY=sk_test_...`) gets the printed value, every other id must
// be captured by the README's own commands.
//
// The platform and the commands run in a network namespace of their own
// (`unshare -rn`, Linux), so that ports 8080 and 8081 are theirs whatever
// else runs on the machine; without unshare they run on the machine's, which
// must then be free.
//
// The commands that cannot run here are skipped by the list below, each with
// its reason; each entry must match exactly one block.

const root = join(__dirname, "..", "..");

const SKIPPED: ReadonlyArray<{ first: RegExp; reason: string }> = [
  { first: /^npm install && npm start$/, reason: "the test starts the platform itself as `npm start` does, on a fresh DATA_DIR" },
  { first: /^MONGO_URL=\S+ KAFKA_BROKERS=\S+ .*npm start$/, reason: "needs a MongoDB server and a Kafka cluster" },
  { first: /^GRPC_PORT=50051 MONGO_URL=/, reason: "each service alone needs MongoDB and Kafka, and runs until stopped" },
  { first: /^npm test$/, reason: "the whole test suite, this test among them" },
  { first: /^docker build /, reason: "needs Docker, a registry and a Kubernetes cluster" },
  {
    first: /^curl -s -X PUT http:\/\/localhost:8080\/api\/v1\/settings\/preference-center\/custom-domain/,
    reason: "custom domains need Kubernetes and cert-manager: `npm start` answers 503 custom_domains_not_enabled (the domains it shows are checked below)",
  },
  {
    first: /^curl -s -X POST "http:\/\/localhost:8080\/api\/v1\/domains\/\$\{DOM:\?\}\/verify"/,
    reason: "verification looks the records up in the domain's DNS, which the test's network namespace cannot reach (embedded/test/sender-domains.test.ts verifies against a DNS server of its own)",
  },
  { first: /^kubectl -n email create secret tls portal-ca /, reason: "needs a Kubernetes cluster with cert-manager and an ingress controller: deploy/kube/test/helm.test.ts runs this path" },
  { first: /^npm run image\b/, reason: "builds the image as root with debootstrap (minutes); npm run test:image (scripts/image/test/image.test.ts) runs it" },
];

/** What the first start prints, by the variable the README tells the reader to put it in. */
const PRINTED = { KEY: "test API key", ADMIN_TOKEN: "admin token", SETUP: "Dashboard setup link" } as const;

interface Block {
  /** README line of the block's first command line (1-based). */
  line: number;
  lines: string[];
}

function shBlocks(markdown: string): Block[] {
  const blocks: Block[] = [];
  const lines = markdown.split("\n");
  for (let i = 0; i < lines.length; i++) {
    if (lines[i]!.trim() !== "```sh") continue;
    const start = i + 1;
    let end = start;
    while (end < lines.length && lines[end]!.trim() !== "```") end++;
    blocks.push({ line: start + 1, lines: lines.slice(start, end) });
    i = end;
  }
  return blocks;
}

/** `NAME=<something with ... or …>`: a value the reader pastes from elsewhere. */
const PLACEHOLDER_ASSIGNMENT = /^\s*(?:export\s+)?([A-Z_]+)=\S*(?:\.\.\.|…)\S*\s*(?:#.*)?$/;

interface Script {
  text: string;
  /** README line of each script line (0: the harness's own). */
  readmeLine: number[];
}

function buildScript(blocks: Block[]): Script {
  const out: string[] = [];
  const readmeLine: number[] = [];
  const add = (text: string, line = 0) => {
    out.push(text);
    readmeLine.push(line);
  };
  add("set -e -o pipefail");
  // LINENO: the first line of a failed command, the last of a failed $(…) that spans lines.
  add(`trap 'echo "README-FAILED \${LINENO}" >&2' ERR`);
  // An alias, not a function: the failure is then the README's line, not the function's.
  add("shopt -s expand_aliases");
  add("alias curl='curl --fail-with-body'");
  for (const block of blocks) {
    block.lines.forEach((text, index) => {
      const placeholder = PLACEHOLDER_ASSIGNMENT.exec(text);
      if (placeholder && placeholder[1]! in PRINTED) add(`: ${placeholder[1]} is set to what the first start printed`, block.line + index);
      else add(text, block.line + index);
    });
  }
  add('echo "README-DONE"');
  return { text: out.join("\n") + "\n", readmeLine };
}

// After the README's commands, in the same namespace: what the mail it made looks like.
const AFTER = `
const base = "http://localhost:8080";
const headers = { "X-API-Key": process.env.KEY, "Content-Type": "application/json" };
const get = async (path) => (await fetch(base + path, { headers })).json();
(async () => {
  const triggers = (await get("/api/v1/triggers?limit=500")).items;
  const previews = [];
  for (const t of triggers) {
    // A trigger fills only the subscriber's metadata.* and the built-in links: nothing else may be missing.
    const res = await fetch(base + "/api/v1/templates/" + t.template_id + "/preview", { method: "POST", headers, body: JSON.stringify({ variables: {} }) });
    previews.push({ trigger: t.id, status: res.status, missing: (await res.json()).missing_variables });
  }
  const domain = await fetch(base + "/api/v1/settings/preference-center/custom-domain", { headers });
  console.log(JSON.stringify({ previews, customDomain: { status: domain.status, body: await domain.json() } }));
})().catch((err) => { console.error(err); process.exit(1); });
`;

function driver(dir: string, netns: boolean): string {
  const node = [process.execPath, ...npmStartNodeArgs(root), join(root, "embedded", "dist", "main.js")].map((a) => `'${a}'`).join(" ");
  return `
set -u
${netns ? "ip link set lo up" : ""}
cd '${dir}/checkout'
env -i PATH="$PATH" HOME='${dir}' DATA_DIR='${dir}/data' ${node} >'${dir}/platform.log' 2>&1 &
platform=$!
for i in $(seq 1 600); do
  curl -s -o /dev/null -w '%{http_code}' http://localhost:8080/readyz 2>/dev/null | grep -q 200 && break
  kill -0 $platform 2>/dev/null || { echo "the platform exited" >&2; exit 3; }
  sleep 0.1
done
export KEY=$(sed -n 's/^ *test API key *\\(sk_test_[A-Za-z0-9_]*\\).*/\\1/p' '${dir}/platform.log')
export ADMIN_TOKEN=$(sed -n 's/^ *admin token *\\([^ ]*\\).*/\\1/p' '${dir}/platform.log')
export SETUP=$(sed -n 's/^ *Dashboard setup link: *\\([^ ]*\\).*/\\1/p' '${dir}/platform.log')
[ -n "$KEY" ] && [ -n "$ADMIN_TOKEN" ] && [ -n "$SETUP" ] || { echo "the first start printed no test key, admin token and setup link" >&2; exit 3; }
env -i PATH="$PATH" HOME='${dir}' KEY="$KEY" ADMIN_TOKEN="$ADMIN_TOKEN" SETUP="$SETUP" bash '${dir}/readme.sh' >'${dir}/readme.out' 2>'${dir}/readme.err'
echo "readme exit $?" >'${dir}/readme.status'
KEY="$KEY" '${process.execPath}' '${dir}/after.js' >'${dir}/after.json'
kill $platform
wait $platform || true
`;
}

function canUnshare(): boolean {
  return spawnSync("unshare", ["-rn", "true"], { stdio: "ignore" }).status === 0;
}

describe("README.md, tried literally on a fresh npm start", () => {
  const readme = readFileSync(join(root, "README.md"), "utf8");
  const blocks = shBlocks(readme);
  const skipped = (block: Block) => SKIPPED.find((s) => s.first.test(block.lines.find((l) => l.trim() && !l.trim().startsWith("#"))?.trim() ?? ""));

  it("skips only the blocks of the list, each of them once", () => {
    for (const s of SKIPPED) {
      const matching = blocks.filter((b) => skipped(b) === s);
      expect({ skip: s.first.source, blocks: matching.length }).toEqual({ skip: s.first.source, blocks: 1 });
    }
  });

  it("asks the reader for nothing but what the first start prints", () => {
    const asked = blocks
      .filter((b) => !skipped(b))
      .flatMap((b) => b.lines.map((text, i) => ({ line: b.line + i, text: text.replace(/\s#.*$/, "").replace(/^\s*#.*$/, "") })))
      .filter(({ text }) => /\.\.\.|…/.test(text) && !(PLACEHOLDER_ASSIGNMENT.exec(text)?.[1]! in PRINTED));
    expect(asked).toEqual([]);
  });

  it("names only domains the platform accepts in its custom-domain commands", () => {
    const block = blocks.find((b) => skipped(b)?.first === SKIPPED[5]!.first)!;
    const domains = [...block.lines.join("\n").matchAll(/"domain":"([^"]+)"|--domain (\S+)/g)].map((m) => m[1] ?? m[2]!);
    expect(domains.length).toBeGreaterThan(0);
    // The platform's own hosts under npm start, and the CNAME target the README names.
    const target = /CUSTOM_DOMAIN_TARGET`, e\.g\. `([^`]+)`/.exec(readme)?.[1];
    expect(target).toBeDefined();
    for (const domain of domains) expect({ domain, ...checkCustomDomain(domain, ["localhost", target!]) }).toMatchObject({ domain, ok: true });
  });

  it("documents the settings of the CLI and every built-in template variable", () => {
    const help = spawnSync(process.execPath, [join(root, "services", "gateway", "dist", "cli.js"), "--help"], { encoding: "utf8" }).stdout;
    const cliSettings = [...(/Environment:\n((?:  \S.*\n)+)/.exec(help)?.[1] ?? "").matchAll(/^ {2}([A-Z_]+)\s/gm)].map((m) => m[1]!);
    expect(cliSettings.length).toBeGreaterThan(0);
    const renderer = readFileSync(join(root, "packages", "render", "src", "renderer.ts"), "utf8");
    const builtins = [.../export interface Builtins \{([^}]*)\}/.exec(renderer)![1]!.matchAll(/^\s*([a-z_]+)\?:/gm)].map((m) => m[1]!);
    expect(builtins.length).toBeGreaterThan(0);
    const undocumented = [
      ...cliSettings.filter((name) => !readme.includes(`\`${name}\``)),
      ...builtins.filter((name) => !readme.includes(`{{${name}}}`) && !readme.includes(`{{${name}.`)).map((name) => `{{${name}}}`),
    ];
    expect(undocumented).toEqual([]);
  });

  it("runs every other command: each exits 0 and each request answers 2xx", () => {
    // The README's examples need curl and jq (.ci/run installs jq).
    for (const tool of ["curl", "jq"]) expect({ tool, found: spawnSync(tool, ["--version"], { stdio: "ignore" }).status === 0 }).toEqual({ tool, found: true });
    const run = blocks.filter((b) => !skipped(b));
    const script = buildScript(run);
    const dir = mkdtempSync(join(tmpdir(), "readme-"));
    try {
      // The commands run from the repository's root (`node services/gateway/dist/cli.js`), and what
      // they write (`> my-data.json`) lands in a checkout of links, not in the repository.
      const checkout = join(dir, "checkout");
      spawnSync("mkdir", [checkout]);
      for (const entry of readdirSync(root)) if (entry !== ".git") symlinkSync(join(root, entry), join(checkout, entry));
      writeFileSync(join(dir, "readme.sh"), script.text);
      writeFileSync(join(dir, "after.js"), AFTER);
      const netns = canUnshare();
      const result = spawnSync(netns ? "unshare" : "bash", netns ? ["-rn", "bash", "-c", driver(dir, true)] : ["-c", driver(dir, false)], {
        encoding: "utf8",
        timeout: 140_000,
      });
      const read = (name: string) => {
        try {
          return readFileSync(join(dir, name), "utf8");
        } catch {
          return "";
        }
      };
      const err = read("readme.err");
      const failed = /README-FAILED (\d+)/.exec(err);
      const failure = failed
        ? {
            readmeLine: script.readmeLine[Number(failed[1]) - 1],
            commandAround: readme.split("\n").slice(script.readmeLine[Number(failed[1]) - 1]! - 3, script.readmeLine[Number(failed[1]) - 1]! + 1),
            output: read("readme.out").split("\n").slice(-5).join("\n"),
            stderr: err.split("\n").slice(-5).join("\n"),
          }
        : undefined;
      // A platform that did not start (without unshare: is something else on port 8080 or 8081?) shows its log.
      const platformLog = result.status === 0 ? "" : read("platform.log").slice(-1500);
      expect({ driver: result.status, stderr: result.stderr.slice(-2000), platformLog, failure }).toEqual({
        driver: 0,
        stderr: "",
        platformLog: "",
        failure: undefined,
      });
      expect(read("readme.out")).toContain("README-DONE");

      const after = JSON.parse(read("after.json")) as {
        previews: Array<{ trigger: string; status: number; missing: string[] }>;
        customDomain: { status: number; body: { code: string } };
      };
      // Every trigger the README makes mails what a trigger can fill: the subscriber's metadata.*, its
      // address and the links (a preview has no recipient, so it lists those as missing too).
      const filledForATrigger = (v: string) => v.startsWith("metadata.") || ["email", "preference_center_url", "unsubscribe_url"].includes(v);
      expect(after.previews.length).toBeGreaterThan(0);
      for (const p of after.previews) {
        expect({ trigger: p.trigger, status: p.status, notFilled: p.missing.filter((v) => !filledForATrigger(v)) }).toEqual({
          trigger: p.trigger,
          status: 200,
          notFilled: [],
        });
      }
      // What the README says of the custom-domain commands under npm start.
      expect(after.customDomain).toEqual({ status: 503, body: expect.objectContaining({ code: "custom_domains_not_enabled" }) });
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
    // The README's commands one after another on a busy 2-core machine: more than the default minute.
  }, 150_000);
});
