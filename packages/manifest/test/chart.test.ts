import { readFileSync } from "node:fs";
import { join } from "node:path";
import { SERVICES } from "@emailsvc/manifest";
import { chartComponent, chartManifest, renderChartManifestTemplate, renderChartValues } from "@emailsvc/manifest/chart";
import { parse, parseDocument } from "yaml";

// The Helm chart's components are generated from the manifest, like the
// generated proto code: this fails when the committed values.yaml says
// something else than packages/manifest/src/services.ts.

const VALUES = join(__dirname, "..", "..", "..", "deploy", "helm", "emailsvc", "values.yaml");
const values = readFileSync(VALUES, "utf8");
const MANIFEST_TEMPLATE = join(__dirname, "..", "..", "..", "deploy", "helm", "emailsvc", "templates", "_manifest.tpl");

describe("the chart's components", () => {
  it("are what the manifest says (else: npm run generate:chart)", () => {
    expect(renderChartValues(values)).toBe(values);
  });

  it("admit exactly the callers of each service, and give each component its secrets and ports", () => {
    const components = parse(values).components;
    expect(Object.keys(components)).toEqual(Object.keys(SERVICES));
    expect(components.subscribers.ports.grpc).toEqual({
      port: 50051,
      env: "GRPC_PORT",
      appProtocol: "kubernetes.io/h2c",
      callers: ["gateway", "delivery", "campaigns", "portal"],
    });
    expect(components.portal.ports.grpc.callers).toEqual(["gateway", "delivery"]);
    expect(components.portal.ports.http).toEqual({ port: 8081, env: "PORTAL_PORT", appProtocol: "http", public: true });
    expect(components.portal.env.PORTAL_HOST).toBe("0.0.0.0");
    expect(components.gateway.readinessProbe.httpGet).toEqual({ path: "/readyz", port: "http" });
    expect(components.delivery.secretEnv).toEqual(["MONGO_URL", "TOKEN_SIGNING_KEYS", "SEALING_KEYS"]);
  });

  it("gives the chart's checks the manifest's secrets, required calls and providers (else: npm run generate:chart)", () => {
    expect(readFileSync(MANIFEST_TEMPLATE, "utf8")).toBe(renderChartManifestTemplate());
    const generated = chartManifest();
    expect(generated.components.delivery).toEqual({
      secrets: ["MONGO_URL", "TOKEN_SIGNING_KEYS", "SEALING_KEYS"],
      requiredCalls: { templates: "TEMPLATES_URL", subscribers: "SUBSCRIBERS_URL" },
    });
    // The providers are the manifest's (delivery's registry is keyed by them), each with the secrets it reads.
    expect(Object.keys(generated.providers)).toEqual(["delivery"]);
    expect(generated.providers.delivery!.setting).toBe("EMAIL_PROVIDER");
    expect(Object.keys(generated.providers.delivery!.options)).toEqual(Object.keys(SERVICES.delivery.providers.options));
    expect(Object.keys(generated.providers.delivery!.options.smtp!.secrets)).toEqual(["SMTP_URL"]);
  });

  it("makes a component for a service the chart does not have yet, and leaves what the chart owns", () => {
    const doc = parseDocument(values);
    doc.deleteIn(["components", "campaigns"]);
    doc.setIn(["components", "retired"], { enabled: true, ports: {} });
    doc.setIn(["components", "subscribers", "ports", "grpc", "callers"], ["gateway"]);
    const edited = doc.toString({ lineWidth: 0, flowCollectionPadding: false });

    const regenerated = renderChartValues(edited);
    const components = parse(regenerated).components;
    expect(components.retired).toBeUndefined();
    expect(components.subscribers.ports.grpc.callers).toEqual(["gateway", "delivery", "campaigns", "portal"]);
    const want = chartComponent("campaigns");
    expect(components.campaigns).toEqual({
      enabled: true,
      ports: want.ports,
      env: want.env,
      secretEnv: want.secretEnv,
      livenessProbe: { grpc: { port: 50054 }, periodSeconds: 10, timeoutSeconds: 2, failureThreshold: 3 },
      readinessProbe: { grpc: { port: 50054 }, periodSeconds: 5, timeoutSeconds: 2, failureThreshold: 2 },
    });
    // The chart's own keys and comments of other components stay.
    expect(components.templates.resources.limits.memory).toBe("1Gi");
    expect(regenerated).toContain("# TEMPLATES_COMPILE_WORKERS: unset");
    expect(regenerated).toContain(`# ${SERVICES.campaigns.summary}`);
    // Generating again changes nothing.
    expect(renderChartValues(regenerated)).toBe(regenerated);
  });
});
