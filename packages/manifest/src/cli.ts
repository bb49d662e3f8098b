// node packages/manifest/dist/cli.js <command>
//   chart [--check]   write what the chart takes from the manifest (deploy/helm/emailsvc/values.yaml's
//                     components, templates/_manifest.tpl); --check only says whether either is stale (exit 1)
//   json              the manifest and what follows from it, as JSON (scripts/helm-check.sh)
import { existsSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { renderChartManifestTemplate, renderChartValues } from "./chart.js";
import { callersOf, COMPONENT_NAMES, isServiceName, manifestOf, optionalSecretsOf, serviceUrlVariable, SERVICE_NAMES, startOrder } from "./index.js";

const root = join(__dirname, "..", "..", "..");
const VALUES_FILE = join(root, "deploy", "helm", "emailsvc", "values.yaml");
const MANIFEST_TEMPLATE = join(root, "deploy", "helm", "emailsvc", "templates", "_manifest.tpl");

function main(argv: string[]): number {
  const [command, ...flags] = argv;
  if (command === "chart") {
    // Each generated file: its path and what the manifest makes of its current text.
    const files: Array<[string, (current: string) => string]> = [
      [VALUES_FILE, renderChartValues],
      [MANIFEST_TEMPLATE, () => renderChartManifestTemplate()],
    ];
    let stale = 0;
    for (const [file, render] of files) {
      const current = existsSync(file) ? readFileSync(file, "utf8") : "";
      const wanted = render(current);
      if (wanted === current) continue;
      stale++;
      if (flags.includes("--check")) console.error(`${file} is stale: it differs from what packages/manifest generates. Run: npm run generate:chart`);
      else {
        writeFileSync(file, wanted);
        console.log(`wrote ${file}`);
      }
    }
    if (flags.includes("--check")) return stale === 0 ? 0 : 1;
    if (stale === 0) console.log("chart up to date");
    return 0;
  }
  if (command === "json") {
    const components = Object.fromEntries(
      COMPONENT_NAMES.map((name) => [
        name,
        {
          ...manifestOf(name),
          optionalSecrets: optionalSecretsOf(name),
          ...(isServiceName(name) ? { urlVariable: serviceUrlVariable(name), callers: callersOf(name).map((c) => c.caller) } : {}),
        },
      ]),
    );
    console.log(JSON.stringify({ components, services: SERVICE_NAMES, startOrder: startOrder() }, null, 2));
    return 0;
  }
  console.error("usage: node packages/manifest/dist/cli.js chart [--check] | json");
  return 2;
}

process.exitCode = main(process.argv.slice(2));
