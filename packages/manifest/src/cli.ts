// node packages/manifest/dist/cli.js <command>
//   chart [--check]   write the Helm chart's components (deploy/helm/emailsvc/values.yaml)
//                     from the manifest; --check only says whether it is stale (exit 1)
//   json              the manifest and what follows from it, as JSON (scripts/helm-check.sh)
import { readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { renderChartValues } from "./chart.js";
import { callersOf, COMPONENT_NAMES, isServiceName, manifestOf, serviceUrlVariable, SERVICE_NAMES, startOrder } from "./index.js";

const root = join(__dirname, "..", "..", "..");
const VALUES_FILE = join(root, "deploy", "helm", "emailsvc", "values.yaml");

function main(argv: string[]): number {
  const [command, ...flags] = argv;
  if (command === "chart") {
    const current = readFileSync(VALUES_FILE, "utf8");
    const wanted = renderChartValues(current);
    if (flags.includes("--check")) {
      if (wanted === current) return 0;
      console.error(`${VALUES_FILE} is stale: its components differ from packages/manifest. Run: npm run generate:chart`);
      return 1;
    }
    if (wanted !== current) writeFileSync(VALUES_FILE, wanted);
    console.log(wanted === current ? "chart components up to date" : `wrote ${VALUES_FILE}`);
    return 0;
  }
  if (command === "json") {
    const components = Object.fromEntries(
      COMPONENT_NAMES.map((name) => [
        name,
        {
          ...manifestOf(name),
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
